/** Serialises async operations (a promise-chain mutex): each call runs after the previous one has settled. */
export function serial(): <T>(fn: () => Promise<T> | T) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
