// Reading fields of a parsed JSON body. Own properties only: a `__proto__` or `constructor` key in
// the JSON cannot stand in for a field, and nothing inherited is ever read.

export function own(body: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(body, key) ? body[key] : undefined;
}

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
