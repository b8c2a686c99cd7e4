import { EventEmitter } from "node:events";
import type { KeyvStoreAdapter, StoredData } from "keyv";
import type { RedisConnection } from "./redis-connection.js";

/**
 * Keyv's store on the broker's own ioredis connection (no second Redis client library). Keys and
 * values as @keyv/redis wrote them before it (`<namespace>::<namespace>:<key>`, Keyv's serialized
 * `{value, expires}`, the store's own expiry), so entries written by an older broker still read.
 */
export class RedisKeyvStore extends EventEmitter implements KeyvStoreAdapter {
  opts: Record<string, unknown> = {};
  namespace?: string | undefined;

  constructor(private readonly connection: RedisConnection) {
    super();
  }

  private key(key: string): string {
    return this.namespace ? `${this.namespace}::${key}` : key;
  }

  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    await this.connection.ready();
    const value = await this.connection.redis.get(this.key(key));
    return (value ?? undefined) as StoredData<Value> | undefined;
  }

  async set(key: string, value: unknown, ttl?: number): Promise<void> {
    await this.connection.ready();
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (ttl !== undefined && ttl > 0) await this.connection.redis.set(this.key(key), text, "PX", Math.ceil(ttl));
    else await this.connection.redis.set(this.key(key), text);
  }

  async delete(key: string): Promise<boolean> {
    await this.connection.ready();
    return (await this.connection.redis.del(this.key(key))) > 0;
  }

  /** Deletes this namespace's keys (SCAN, never KEYS: a large Redis is not blocked). */
  async clear(): Promise<void> {
    if (!this.namespace) throw new Error("a Redis key-value store without a namespace is never cleared");
    await this.connection.ready();
    const pattern = `${this.namespace}::*`;
    let cursor = "0";
    do {
      const [next, keys] = await this.connection.redis.scan(cursor, "MATCH", pattern, "COUNT", 500);
      if (keys.length > 0) await this.connection.redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
}
