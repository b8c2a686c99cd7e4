/**
 * Whether `text` is standard base64 with padding, as GraphQL's Base64String takes it: groups of
 * four from `A-Z a-z 0-9 + /`, the last group ending `==` or `=` at most. One pass over the
 * characters, no regular expression: a backtracking pattern over a 20 MiB file overflowed V8's
 * regexp stack (a 500 where the caller had sent a valid file).
 */
export function isBase64(text: string): boolean {
  const length = text.length;
  if (length % 4 !== 0) return false;
  const padding = length === 0 ? 0 : text.charCodeAt(length - 1) !== EQUALS ? 0 : text.charCodeAt(length - 2) === EQUALS ? 2 : 1;
  const data = length - padding;
  for (let index = 0; index < data; index += 1) {
    if (!isAlphabet(text.charCodeAt(index))) return false;
  }
  return true;
}

const EQUALS = 0x3d;

function isAlphabet(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2b || // +
    code === 0x2f // /
  );
}
