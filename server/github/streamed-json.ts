// A JSON answer read as it arrives, for the platform's answers that carry thousands of repository
// objects (the crawl's listing pages, a mint answer over selected repositories: about 5 KB each,
// some 26 MB for 5,000). Read whole, such an answer is joined into one buffer, decoded into one
// string and parsed in one go once its last byte is in: three large fresh allocations (on this
// machine each costs more than the copy it holds), every repository object kept whole until the
// parse ends, and all of the work after the transfer. Here each element of the array under `key`
// of the top-level object is parsed on its own as soon as it is in (and cut down to what the
// caller reads), and the envelope around the array is parsed at the end, the array left empty.
//
// How the elements are found without reading every byte in JavaScript (slow in a new process,
// before the JIT has compiled the loop): the bytes around the array (the envelope) are scanned
// for strings, brackets and keys; inside the array, an element is assumed to end at a `}` directly
// followed by `,{` or `]` (GitHub's compact JSON of an array of objects), found with the native
// indexOf. The guess is proved by parsing: text from the start of an element up to a separator
// comma parses as JSON only if it is exactly that element (a proper prefix of an object ends
// inside a string or with a bracket open; a longer piece holds a top-level comma). A guess that
// does not parse (a `},{` inside a string) is passed over and the element read on to the next.
//
// Kept: it pays (issue 28). Fresh 1 × 5,000-repository crawl, gzip on, 40 ms-RTT 100 Mbit/s link
// (simulator/link.ts), median of 5: mint answer listing all 5,000: 1.04 s and 150 MB peak RSS here,
// 1.31 s and 203 MB with JSON.parse (lookups wait for the last byte); @streamparser/json took 2.4×
// the CPU. 50 listing pages: 1.15 s / 148 MB here, 1.09 s / 175 MB with JSON.parse (memory only).
//
// The value is the one JSON.parse gives for the whole text, or the answer is "not JSON" exactly
// when JSON.parse would throw: test/streamed-json.test.ts compares the two on random values and
// random corruptions of them. Whatever this does not follow (no top-level object, the key twice,
// a key written with escapes, the key's value not an array of objects, brackets that do not match,
// nesting past MAX_DEPTH, spaces between elements, more than MAX_MISSES wrong guesses) sends the
// answer to JSON.parse whole, which then decides. The chunks are kept until the end for that (as
// a buffered read keeps them).

/** The answer as JSON.parse reads it, or its text when it is not JSON. */
export type JsonRead = { json: true; value: unknown } | { json: false; text: string };

export interface StreamedJson {
  push(chunk: Uint8Array): void;
  end(): JsonRead;
  /** After end(): the elements were read as they arrived (false: the whole text went to JSON.parse). */
  readonly streamed: boolean;
}

/**
 * Told about an answer while it arrives, before it is known to be JSON at all: a hint for work
 * that can start early and be dropped, never an answer (end() is the only one).
 */
export interface StreamListener {
  /** The array opened; the envelope's members before it (parsed alone, if they parse). */
  opened?(before: Record<string, unknown>): void;
  /** Each element as it is read (cut to `keep`), in order, while it is read as it arrives. */
  element?(element: unknown): void;
}

/** Deeper than this in the envelope, the scan stops following and the whole text goes to JSON.parse. */
const MAX_DEPTH = 64;
/** Element ends guessed wrong (each costs a parse of the element so far) before giving up. */
export const MAX_MISSES = 64;

/** Members to keep of an element: `true` keeps one as it is, a shape keeps an object's named members. */
export type Shape = { readonly [name: string]: true | Shape };

/**
 * `value` with only the own members `shape` names (in the shape's order); anything not a plain
 * object (an array, a string, null…) as it is.
 */
export function pick(value: unknown, shape: Shape): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const kept: Record<string, unknown> = {};
  for (const name in shape) {
    if (!Object.hasOwn(shape, name) || !Object.hasOwn(value, name)) continue;
    const wanted = shape[name]!;
    const member = (value as Record<string, unknown>)[name];
    kept[name] = wanted === true ? member : pick(member, wanted);
  }
  return kept;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Reads an answer as it arrives. With `keep`, each element of the array is given as `pick(element,
 * keep)`: the rest of each element is dropped as soon as it is parsed (GitHub's repository object
 * has some 90 members; the broker reads 5), so it never outlives a young-generation collection.
 */
export function streamedJson(key: string, keep?: Shape, listener?: StreamListener): StreamedJson {
  const keyBytes = Buffer.from(JSON.stringify(key));
  const chunks: Buffer[] = [];
  /** Where each chunk starts in the answer. */
  const starts: number[] = [];
  let length = 0;
  /** 3 after a byte-order mark, which decoding drops (as fetch's text() does). */
  let origin = 0;
  /** False for good once this gives up following the answer (see above). */
  let followed = true;

  // The envelope's scan: where it goes on from, and what it has seen.
  let envelopeAt = 0;
  const stack = new Uint8Array(MAX_DEPTH);
  let depth = 0;
  let started = false;
  let inString = false;
  let escaped = false;
  /** In the top-level object, the next string is a key. */
  let expectKey = false;
  /** Offset of the top-level key being read (its opening quote), or -1. */
  let keyStart = -1;
  /** The last top-level key read was `key`: its value comes next, after the colon. */
  let keyMatched = false;
  let keySeen = false;
  let awaitingValue = false;

  // The array under `key`.
  let arrayOpen = -1;
  let arrayClose = -1;
  let inArray = false;
  /** The element being read starts here; its end is looked for from `searchAt`. */
  let elementStart = -1;
  let searchAt = -1;
  let misses = 0;
  const elements: unknown[] = [];
  let streamed = false;

  /** Index of the chunk holding offset `at` (at < length). */
  const chunkAt = (at: number): number => {
    let c = chunks.length - 1;
    while (c > 0 && starts[c]! > at) c -= 1;
    return c;
  };
  const byteAt = (at: number): number | undefined => {
    if (at >= length) return undefined;
    const c = chunkAt(at);
    return chunks[c]![at - starts[c]!];
  };
  /** Bytes [from, to), as one buffer (a view when in one chunk). */
  const bytes = (from: number, to: number): Buffer => {
    const pieces: Buffer[] = [];
    for (let c = chunkAt(from); c < chunks.length && starts[c]! < to; c += 1) {
      const chunk = chunks[c]!;
      pieces.push(chunk.subarray(Math.max(0, from - starts[c]!), Math.min(chunk.length, to - starts[c]!)));
    }
    return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
  };
  const text = (from: number, to: number): string => bytes(from, to).toString("utf8");
  /** The first `byte` at or after `from`, or -1. */
  const find = (byte: number, from: number): number => {
    if (from >= length) return -1;
    for (let c = chunkAt(from); c < chunks.length; c += 1) {
      const found = chunks[c]!.indexOf(byte, Math.max(0, from - starts[c]!));
      if (found !== -1) return starts[c]! + found;
    }
    return -1;
  };

  const giveUp = () => {
    followed = false;
  };

  /** Parses [elementStart, end) as an element; false (a miss) if it is not JSON. */
  const takeElement = (end: number): boolean => {
    let element: unknown;
    try {
      element = JSON.parse(text(elementStart, end));
    } catch {
      misses += 1;
      if (misses > MAX_MISSES) giveUp();
      return false;
    }
    const kept = keep ? pick(element, keep) : element;
    elements.push(kept);
    if (listener?.element) tell(() => listener!.element!(kept));
    return true;
  };

  const tellOpened = () => {
    let before: unknown;
    try {
      before = JSON.parse(`${text(origin, arrayOpen + 1)}]}`);
    } catch {
      return;
    }
    tell(() => listener!.opened!(before as Record<string, unknown>));
  };
  /** A listener that throws is told nothing more; the read goes on (it is only a hint). */
  const tell = (call: () => void) => {
    try {
      call();
    } catch {
      listener = undefined;
    }
  };

  const closeArray = (at: number) => {
    arrayClose = at;
    inArray = false;
    depth -= 1;
    envelopeAt = at + 1;
  };

  /** Reads elements as far as the bytes in hand allow. */
  const readArray = () => {
    if (elements.length === 0 && searchAt === -1) {
      // The array's first byte that is not a space: `]` (empty), `{`, or something not followed.
      let at = arrayOpen + 1;
      while (at < length && isSpace(byteAt(at)!)) at += 1;
      if (at === length) return;
      const first = byteAt(at)!;
      if (first === CLOSE_ARRAY) return closeArray(at);
      if (first !== OPEN_OBJECT) return giveUp();
      searchAt = at;
    }
    while (followed) {
      const close = find(CLOSE_OBJECT, searchAt);
      if (close === -1) {
        searchAt = length;
        return;
      }
      const next = byteAt(close + 1);
      if (next === undefined) {
        searchAt = close;
        return;
      }
      if (next === CLOSE_ARRAY) {
        if (takeElement(close + 1)) return closeArray(close + 1);
      } else if (next === COMMA) {
        const after = byteAt(close + 2);
        if (after === undefined) {
          searchAt = close;
          return;
        }
        if (after === OPEN_OBJECT && takeElement(close + 1)) elementStart = close + 2;
      }
      searchAt = close + 1;
    }
  };

  /** Scans the envelope from `envelopeAt` to the end of the bytes in hand, or until the array opens. */
  const scanEnvelope = () => {
    for (let c = chunkAt(envelopeAt); c < chunks.length && followed && !inArray; c += 1) {
      const chunk = chunks[c]!;
      const base = starts[c]!;
      let i = Math.max(0, envelopeAt - base);
      if (base === 0 && i === 0 && chunk[0] === 0xef) {
        if (chunk.length < 3) return giveUp(); // a byte-order mark split between chunks, maybe
        if (chunk[1] === 0xbb && chunk[2] === 0xbf) i = origin = 3;
      }
      for (; i < chunk.length; i += 1) {
        const byte = chunk[i]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (byte === BACKSLASH) {
            if (keyStart !== -1) return giveUp(); // an escaped key: JSON.parse alone reads it
            escaped = true;
          } else if (byte === QUOTE) {
            inString = false;
            if (keyStart !== -1) {
              const end = base + i + 1;
              const matched = end - keyStart === keyBytes.length && bytes(keyStart, end).equals(keyBytes);
              if (matched && keySeen) return giveUp();
              keyMatched = matched;
              keySeen ||= matched;
              keyStart = -1;
            }
          }
          continue;
        }
        if (byte === QUOTE) {
          if (!started || awaitingValue) return giveUp();
          inString = true;
          if (depth === 1 && expectKey) {
            keyStart = base + i;
            expectKey = false;
          }
        } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
          if (depth === MAX_DEPTH) return giveUp();
          if (!started) {
            if (byte !== OPEN_OBJECT) return giveUp();
            started = true;
            expectKey = true;
          } else if (awaitingValue) {
            if (byte !== OPEN_ARRAY) return giveUp();
            awaitingValue = false;
            arrayOpen = base + i;
            elementStart = arrayOpen + 1;
            inArray = true;
          }
          stack[depth] = byte;
          depth += 1;
          if (inArray) {
            envelopeAt = base + i + 1;
            if (listener?.opened) tellOpened();
            return;
          }
        } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
          if (depth === 0 || stack[depth - 1] !== byte - 2) return giveUp();
          depth -= 1;
        } else if (byte === COMMA) {
          if (depth === 1) expectKey = true;
        } else if (byte === COLON) {
          if (depth === 1 && keyMatched) {
            awaitingValue = true;
            keyMatched = false;
          }
        } else if (!isSpace(byte) && (awaitingValue || !started)) {
          return giveUp(); // the key's value is not an array, or the answer is not an object
        }
      }
      envelopeAt = base + chunk.length;
    }
  };

  const advance = () => {
    while (followed) {
      if (inArray) {
        readArray();
        if (inArray) return;
      } else {
        scanEnvelope();
        if (!inArray) return;
      }
    }
  };

  const whole = (): JsonRead => {
    const raw = bytes(0, length);
    const all = (raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw).toString("utf8");
    let value: unknown;
    try {
      value = JSON.parse(all);
    } catch {
      return { json: false, text: all };
    }
    const holder = value as Record<string, unknown> | null;
    if (keep && holder !== null && typeof holder === "object" && !Array.isArray(holder) && Array.isArray(holder[key])) {
      holder[key] = (holder[key] as unknown[]).map((element) => pick(element, keep));
    }
    return { json: true, value };
  };

  return {
    get streamed() {
      return streamed;
    },
    push(chunk) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (buffer.length === 0) return;
      chunks.push(buffer);
      starts.push(length);
      length += buffer.length;
      advance();
    },
    end() {
      if (!followed || arrayClose === -1 || depth !== 0 || inString) return whole();
      let envelope: unknown;
      try {
        envelope = JSON.parse(text(origin, arrayOpen + 1) + text(arrayClose, length));
      } catch {
        return whole();
      }
      const holder = envelope as Record<string, unknown>;
      if (!Object.hasOwn(holder, key) || !Array.isArray(holder[key]) || (holder[key] as unknown[]).length !== 0) return whole();
      holder[key] = elements;
      streamed = true;
      return { json: true, value: holder };
    },
  };
}
