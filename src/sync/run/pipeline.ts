/**
 * Fetch page N+1 while page N commits. Commits stay strictly in order and one at a time; at most one fetch runs
 * ahead. A page's checkpoint only covers that page, so a crash between the two loses nothing: the next run resumes
 * at the last committed cursor and fetches the prefetched page again.
 */
export interface PipelineSteps<J, P> {
  fetch(job: J, signal: AbortSignal): Promise<P>;
  /**
   * The job that follows a fetched page (next page, or the next window's first page), if any. It may wait (for room
   * ahead): the page's commit goes on meanwhile.
   */
  next(page: P, job: J): J | undefined | Promise<J | undefined>;
  commit(page: P, job: J): Promise<void>;
}

/**
 * Runs jobs from `first` until `next` returns undefined. Stops after the current commit when `signal` aborts and
 * returns 'interrupted'; a fetch in flight at that moment is abandoned (its page was not committed, so nothing is
 * lost).
 */
export async function runPipeline<J, P>(
  first: J,
  steps: PipelineSteps<J, P>,
  signal: AbortSignal | undefined,
): Promise<'done' | 'interrupted'> {
  const local = new AbortController();
  const fetchSignal = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
  const start = (job: J) => {
    const promise = steps.fetch(job, fetchSignal);
    // Rejections of a prefetch that is never awaited (commit failed first) must not surface as unhandled.
    promise.catch(() => {});
    return { job, promise };
  };
  let current: { job: J; promise: Promise<P> } | undefined = start(first);
  try {
    while (current) {
      if (signal?.aborted) return 'interrupted';
      let page: P;
      try {
        page = await current.promise;
      } catch (error) {
        if (signal?.aborted) return 'interrupted';
        throw error;
      }
      const following = steps.next(page, current.job);
      const prefetched =
        following instanceof Promise
          ? following.then((job) => (job === undefined ? undefined : start(job)))
          : following === undefined
            ? undefined
            : start(following);
      // A next job that waits must not hold up this commit (which may be what it waits for).
      if (prefetched instanceof Promise) prefetched.catch(() => {});
      try {
        await steps.commit(page, current.job);
      } catch (error) {
        // SIGTERM cancels a commit that waits on the database (openStore's signal): nothing of the page was
        // committed, and the run is interrupted, not failed.
        if (signal?.aborted) return 'interrupted';
        throw error;
      }
      current = await prefetched;
    }
    return 'done';
  } finally {
    local.abort();
  }
}
