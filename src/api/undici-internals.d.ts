// The undici files src/api/undici-pool.ts loads; their types are undici's own (imported there from 'undici').
declare module 'undici/lib/api/index.js' {
  const api: Record<string, unknown>;
  export default api;
}
declare module 'undici/lib/dispatcher/dispatcher.js' {
  const Dispatcher: { prototype: object };
  export default Dispatcher;
}
declare module 'undici/lib/dispatcher/pool.js' {
  const Pool: unknown;
  export default Pool;
}
