// A large JSON answer's gzip with the compressed bytes of its kept run reused (json-text.ts keeps
// each repository object's bytes; a listing page or a mint over selected repositories is mostly a
// run of them, the same run answer after answer). The run is compressed once, as raw deflate
// ended by a sync flush (byte-aligned, not final); each answer compresses only the text around it
// (a mint's new token before, the closing brackets after) and joins the three into one gzip member
// with the whole text's CRC-32 and length: what any gunzip reads as that text, no bigger than a
// gzip of it in one go (some 13 bytes more for a 25 MB answer of 0.83 MB).
// Why: compressing the 25 MB mint answer of 5,000 repositories took this simulator 114–123 ms of
// CPU per mint (gzipSync, this machine), this 8.5 ms (the CRC). GitHub runs that work on other
// machines; here it took turns with the broker being measured on the same two cores, and delayed
// the answer past what the link itself allows (issue 28's bench).
import { constants, crc32, deflateRawSync } from "node:zlib";
import { joinedChunks } from "./json-text.js";

/** A run of kept pieces worth remembering: smaller ones are compressed with the rest. */
export const KEPT_RUN_BYTES = 64 * 1024;
/** Runs remembered per first piece (a listing's pages start at different pieces). */
const RUNS_PER_PIECE = 4;

interface CompressedRun {
  pieces: ReadonlyArray<string | Buffer>;
  deflated: Buffer;
}

const runs = new WeakMap<Buffer, CompressedRun[]>();

/** gzip's header as zlib writes it (no name, no time, default level, Unix). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]);

/**
 * The gzip of the pieces joined, in one buffer; undefined when they hold no run of
 * kept bytes (`Buffer` pieces, from the first to the last) of at least KEPT_RUN_BYTES.
 */
export function gzipWithKeptRun(pieces: ReadonlyArray<string | Buffer>): Buffer | undefined {
  const first = pieces.findIndex((piece) => Buffer.isBuffer(piece));
  if (first === -1) return undefined;
  let last = pieces.length - 1;
  while (!Buffer.isBuffer(pieces[last])) last -= 1;
  const run = pieces.slice(first, last + 1);
  let bytes = 0;
  for (const piece of run) bytes += Buffer.byteLength(piece);
  if (bytes < KEPT_RUN_BYTES) return undefined;

  const key = pieces[first] as Buffer;
  const known = runs.get(key) ?? [];
  let compressed = known.find((entry) => entry.pieces.length === run.length && entry.pieces.every((piece, i) => piece === run[i]));
  if (compressed === undefined) {
    compressed = { pieces: run, deflated: deflateRawSync(joinedChunks(run), { finishFlush: constants.Z_SYNC_FLUSH }) };
    runs.set(key, [compressed, ...known].slice(0, RUNS_PER_PIECE));
  }
  const head = joinedChunks(pieces.slice(0, first));
  const tail = joinedChunks(pieces.slice(last + 1));
  let crc = crc32(head);
  for (const piece of run) crc = crc32(piece, crc);
  crc = crc32(tail, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE((head.length + bytes + tail.length) % 2 ** 32, 4);
  // One buffer, one write: with several corked writes and end(), Node 22.23 and 24.21 (not 20) ended the chunked
  // body (0\r\n\r\n) after the first of them and sent the rest after the end.
  return Buffer.concat([GZIP_HEADER, deflateRawSync(head, { finishFlush: constants.Z_SYNC_FLUSH }), compressed.deflated, deflateRawSync(tail), trailer]);
}
