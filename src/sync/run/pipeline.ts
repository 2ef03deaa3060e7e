/**
 * Fetch page N+1 while page N commits. Commits stay strictly in order; at most one fetch runs ahead, and up to `ahead`
 * fetched pages wait for their commit (a committer may take those that wait together: committer.ts). A page's
 * checkpoint only covers that page, so a crash between the two loses nothing: the next run resumes at the last
 * committed cursor and fetches the pages not committed again.
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
 * Runs jobs from `first` until `next` returns undefined, with at most `ahead` (at least 1) pages handed to `commit`
 * and not yet committed. Stops after the commits under way when `signal` aborts and returns 'interrupted'; a fetch in
 * flight at that moment is abandoned (its page was not committed, so nothing is lost). Returns only once no commit it
 * started is still running.
 */
export async function runPipeline<J, P>(
  first: J,
  steps: PipelineSteps<J, P>,
  signal: AbortSignal | undefined,
  ahead = 1,
): Promise<'done' | 'interrupted'> {
  if (!Number.isInteger(ahead) || ahead < 1) throw new RangeError(`runPipeline: ahead must be a whole number of pages, at least 1 (got ${ahead})`);
  const local = new AbortController();
  const fetchSignal = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
  const start = (job: J) => {
    const promise = steps.fetch(job, fetchSignal);
    // Rejections of a prefetch that is never awaited (commit failed first) must not surface as unhandled.
    promise.catch(() => {});
    return { job, promise };
  };
  const committing: Promise<void>[] = [];
  // The oldest commit under way: SIGTERM cancels a commit that waits on the database (openStore's signal), which
  // leaves the run interrupted, not failed; nothing of the page was committed.
  const settleOldest = async (): Promise<'interrupted' | undefined> => {
    try {
      await committing.shift();
    } catch (error) {
      if (signal?.aborted) return 'interrupted';
      throw error;
    }
    return undefined;
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
      const committed = steps.commit(page, current.job);
      committed.catch(() => {});
      committing.push(committed);
      while (committing.length >= ahead) if ((await settleOldest()) === 'interrupted') return 'interrupted';
      current = await prefetched;
    }
    while (committing.length > 0) if ((await settleOldest()) === 'interrupted') return 'interrupted';
    return 'done';
  } finally {
    local.abort();
    // Whatever ends the run (a failed fetch, a failed commit, SIGTERM), no commit it started runs on after it.
    await Promise.allSettled(committing);
  }
}
