// The suite's shared Redis: global-setup.ts starts it and hands its URL to every worker (a module
// of its own: importing it outside a jest run fails at once, with what to do).
const url = process.env.TOKENSMITH_TEST_REDIS_URL;
if (!url) throw new Error("TOKENSMITH_TEST_REDIS_URL is not set: run the tests through jest (its global setup starts a Redis) or set it to a Redis URL");

/** Tests keep to key prefixes of their own on it. */
export const REDIS_URL: string = url;

/** Deletes every key under these prefixes (`<prefix>:*`) on the suite's Redis: a test file's clean-up. */
export async function deleteKeysUnder(prefixes: readonly string[]): Promise<void> {
  const { Redis } = await import("ioredis");
  const redis = new Redis(url!);
  try {
    for (const prefix of prefixes) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  } finally {
    await redis.quit();
  }
}
