// Process-wide pool of RSA-2048 key pairs. Generating one takes ~200 ms, so keys are made once
// and handed out in turn: the first MAX_DISTINCT takes are all different (every issuer, App and
// rotation in a test file gets its own key), after that keys are recycled round-robin.
import { generateKeyPair, generateKeyPairSync, type KeyObject } from "node:crypto";

export interface RsaKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

const MAX_DISTINCT = 24;
const keys: RsaKeyPair[] = [];
let pending: Promise<void>[] = [];
let taken = 0;

function generate(): Promise<RsaKeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair("rsa", { modulusLength: 2048 }, (error, publicKey, privateKey) => {
      if (error) reject(error);
      else resolve({ publicKey, privateKey });
    });
  });
}

/**
 * Make sure `spare` untaken keys are ready, generating them in parallel off the main thread.
 * Called from createSimulator so the synchronous takers (createApp, rotateKey) rarely block.
 */
export async function ensureSpareKeys(spare: number): Promise<void> {
  await Promise.all(pending);
  const wanted = Math.min(MAX_DISTINCT, taken + spare) - keys.length;
  if (wanted <= 0) return;
  const batch = Array.from({ length: wanted }, () => generate().then((pair) => void keys.push(pair)));
  pending = batch;
  await Promise.all(batch);
  pending = [];
}

/** The next key; generated synchronously only if the pool ran dry below MAX_DISTINCT. */
export function takeKeyPair(): RsaKeyPair {
  const index = taken % MAX_DISTINCT;
  taken += 1;
  if (index < keys.length) return keys[index]!;
  const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
  keys.push(pair);
  return pair;
}
