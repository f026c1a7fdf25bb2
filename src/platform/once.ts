/**
 * `make()` on the first call, its result on every later one: what is built or loaded on first use
 * rather than when the service loads (a promise is kept as it is, a rejected one included).
 */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
