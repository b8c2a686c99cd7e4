import type { BrokerContext } from "../context.js";
import type { PlatformSettings } from "../settings.js";
import { describeKeySource, primeSealSecret, signerFor, type AppKeySource } from "../signing/app-key.js";
import { SignerError } from "../signing/pkcs11-signer.js";

/**
 * Why a listening broker still cannot mint: /readyz answers 503 with these, so an orchestrator
 * routes no job to it. Names settings and issuers only, never a value (a store URL may hold a
 * password). `store_unreachable` alone is not one of them: /token goes on without its stores, so
 * it is told in a 200's `degraded` (isDegradation), lest one Redis outage empty the load balancer.
 */
export type NotReadyReason =
  | { reason: "app_not_configured"; platform: PlatformSettings["name"]; missing: string[]; problem?: string }
  | { reason: "invalid_token_permissions"; setting: "TOKEN_PERMISSIONS"; problem: string }
  | { reason: "store_unreachable"; setting: StoreSetting }
  | { reason: "key_set_not_fetched"; platform: PlatformSettings["name"]; issuer: string }
  | { reason: "app_key_unavailable"; platform: PlatformSettings["name"]; setting: string; key: string; step: string; problem: string };

type StoreSetting = "SERVICE_JWKS_CACHE" | "LEGACY_QUOTA_KV" | "WEBHOOK_QUEUE";

/** A reason /token is served without (docs/deploying.md#6-health-checks-and-scraping): told, never a 503 by itself. */
export function isDegradation(reason: NotReadyReason): boolean {
  return reason.reason === "store_unreachable";
}

/** Upper bound on a key-set fetch a probe waits for: under a Kubernetes probe's default 1 s timeout. The fetch goes on after it. */
const PROBE_WAIT_MS = 800;

/**
 * The checks behind /readyz, read per probe like every setting (docs/settings.md): each configured App is
 * complete, TOKEN_PERMISSIONS parses, each configured store answers a read, each trusted issuer's key set is held (a probe
 * starts the fetch when it is not, so readiness does not wait for the first job).
 */
export function readinessChecks(ctx: BrokerContext, options: { probeWaitMs?: number } = {}): () => Promise<NotReadyReason[]> {
  const waitMs = options.probeWaitMs ?? PROBE_WAIT_MS;
  return async () => {
    const settings = ctx.settings();
    const platforms = settings.enterprise ? [settings.main, settings.enterprise] : [settings.main];
    const reasons: NotReadyReason[] = [];
    for (const platform of platforms) {
      if (platform.app.ok) continue;
      const { missing, problem } = platform.app;
      reasons.push({ reason: "app_not_configured", platform: platform.name, missing, ...(problem ? { problem } : {}) });
    }
    // Every /token would answer 400 invalid_token_permissions: no job should be routed here.
    if (!settings.tokenPermissions.ok) reasons.push({ reason: "invalid_token_permissions", setting: "TOKEN_PERMISSIONS", problem: settings.tokenPermissions.problem });

    const stores: Array<[StoreSetting, string | null]> = [
      ["SERVICE_JWKS_CACHE", settings.jwksCacheUrl],
      ["LEGACY_QUOTA_KV", settings.releasesKvUrl],
      ["WEBHOOK_QUEUE", settings.webhookQueueUrl],
    ];
    // One probe per distinct URL (one Redis often serves all three), told against each setting.
    const reachable = new Map<string, Promise<boolean>>();
    const probes = stores.flatMap(([setting, url]) => {
      if (!url) return [];
      let probe = reachable.get(url);
      if (!probe) {
        const store = ctx.stores.get(url, "tokensmith-readyz"); // null: a URL the broker cannot use at all
        probe = store ? store.reachable() : Promise.resolve(false);
        reachable.set(url, probe);
      }
      return [probe.then((ok) => [setting, ok] as const)];
    });

    const snapshot = ctx.jwksSnapshot(settings);
    const keySets = platforms.map(async (platform) => {
      const source = ctx.keySetFor(platform.issuer);
      if (source.held()) return null;
      const held = await Promise.race([source.prime(snapshot), delay(waitMs).then(() => false)]);
      return held ? null : platform;
    });

    // Each key-store key (the first key of each platform): its session open and its key found,
    // and the main App's seal secret made (server/signing/app-key.ts); a store that does not answer
    // within the probe's wait is not held against it (the attempt goes on), one that failed is.
    const keyStores = platforms.flatMap((platform) => {
      if (!platform.app.ok || platform.app.credentials.key.kind !== "pkcs11") return [];
      const key: AppKeySource = platform.app.credentials.key;
      const attempt = signerFor(key).open().then(() => (platform.name === "main" ? primeSealSecret(key) : undefined));
      return [Promise.race([attempt.then(() => null, (error: unknown) => error), delay(waitMs).then(() => null)]).then((error) => {
        if (error === null) return null;
        const failure = error instanceof SignerError ? error : new SignerError("sign", "failed");
        return { reason: "app_key_unavailable" as const, platform: platform.name, setting: key.setting, key: describeKeySource(key), step: failure.step, problem: failure.reason };
      })];
    });

    for (const [setting, up] of await Promise.all(probes)) {
      ctx.metrics.storeReachable.set({ setting }, up ? 1 : 0);
      if (!up) reasons.push({ reason: "store_unreachable", setting });
    }
    for (const failed of await Promise.all(keyStores)) if (failed) reasons.push(failed);
    for (const platform of await Promise.all(keySets)) if (platform) reasons.push({ reason: "key_set_not_fetched", platform: platform.name, issuer: platform.issuer });
    return reasons;
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
