// JSON for route bodies, with the bytes of shared deep-frozen objects kept between answers. A
// 5,000-repository installation sends GitHub's full repository object (some 90 fields) 5,000 times
// per listing and again in a mint's answer (about 22 MB each time): serialising and encoding each
// object once, and handing the kept bytes to the socket as they are, keeps the simulator's CPU out
// of the broker's benchmark figures. The bytes are exactly JSON.stringify's
// (test/simulator-json-text.test.ts).

const kept = new WeakMap<object, Buffer>();
const reusable = new WeakSet<object>();

/**
 * Lets `jsonChunks` keep `value`'s bytes. Only for values that can never change again: deep-frozen,
 * without toJSON, nothing JSON.stringify would see differently later.
 */
export function markReusable<T extends object>(value: T): T {
  reusable.add(value);
  return value;
}

/**
 * `JSON.stringify(value)` as pieces to write one after another (undefined where JSON.stringify
 * answers undefined): text, and the kept bytes of values marked reusable.
 */
export function jsonChunks(value: unknown): Array<string | Buffer> | undefined {
  const chunks: Array<string | Buffer> = [];
  let text = "";
  const add = (piece: unknown): boolean => {
    if (piece === null || typeof piece !== "object") {
      const primitive = JSON.stringify(piece);
      if (primitive === undefined) return false;
      text += primitive;
      return true;
    }
    if (reusable.has(piece)) {
      let bytes = kept.get(piece);
      if (bytes === undefined) {
        bytes = Buffer.from(JSON.stringify(piece));
        kept.set(piece, bytes);
      }
      if (text !== "") chunks.push(text);
      chunks.push(bytes);
      text = "";
      return true;
    }
    // Anything with toJSON, boxed primitives, maps, instances of a class: as JSON.stringify says.
    const prototype = Object.getPrototypeOf(piece);
    if (typeof (piece as { toJSON?: unknown }).toJSON === "function" || (prototype !== Object.prototype && prototype !== null && !Array.isArray(piece))) {
      const whole = JSON.stringify(piece);
      if (whole === undefined) return false;
      text += whole;
      return true;
    }
    if (Array.isArray(piece)) {
      text += "[";
      for (let i = 0; i < piece.length; i += 1) {
        if (i > 0) text += ",";
        if (!add(piece[i])) text += "null";
      }
      text += "]";
      return true;
    }
    text += "{";
    let first = true;
    for (const key of Object.keys(piece)) {
      // A member JSON.stringify skips (undefined, a function, a symbol) leaves no text: a false
      // `add` never pushed a chunk, so taking the text back undoes the key.
      const before = text;
      text += `${first ? "" : ","}${JSON.stringify(key)}:`;
      if (add((piece as Record<string, unknown>)[key])) first = false;
      else text = before;
    }
    text += "}";
    return true;
  };
  if (!add(value)) return undefined;
  if (text !== "") chunks.push(text);
  return chunks;
}

/** `jsonChunks`' pieces (or any such pieces) as one buffer. */
export function joinedChunks(pieces: ReadonlyArray<string | Buffer>): Buffer {
  return Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)));
}
