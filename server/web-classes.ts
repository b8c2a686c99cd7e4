// `value instanceof Request` (or Headers) reads the global, and in Node the first read of any of
// fetch's globals loads Node's own fetch implementation (its bundled undici): some 17 ms of a new
// process's first request, on the crawl's path before its first upstream call, for a check that a
// string, a URL or a plain record already answers. These look at the value first and read the
// global only for an object that could be one. The /releases crawl then reaches its first upstream
// call without loading it (a CPU profile of a new broker shows no load until the crawl is done).

/** A fetch Request (a string or a URL never is). */
export function isRequest(value: unknown): value is Request {
  return typeof value === "object" && value !== null && !(value instanceof URL) && value instanceof Request;
}

/** A fetch Headers object (a plain record or an array of pairs never is). */
export function isHeaders(value: unknown): value is Headers {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype !== Object.prototype && prototype !== null && value instanceof Headers;
}
