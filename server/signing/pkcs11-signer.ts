// Signing with a private key that stays in a PKCS#11 key store (docs/deploying.md#keep-the-app-key-in-a-key-store):
// the key object is found and used for C_Sign with CKM_SHA256_RSA_PKCS, never read. Each failure
// names its step (module, slot, login, object, sign); a session the token invalidated (token
// removed, re-initialised, the library restarted) is dropped and opened again on the next call,
// so the broker recovers without a restart. Nothing secret (PIN, the URI's query) is ever logged.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Pkcs11KeyRef } from "./pkcs11-uri.js";

type Pkcs11Module = typeof import("pkcs11js");
type Pkcs11 = InstanceType<Pkcs11Module["PKCS11"]>;
type Handle = Buffer;

export type SignerStep = "module" | "slot" | "login" | "object" | "sign";

/** A signature that could not be made, with the step that failed and why (a CKR_ name, never a secret). */
export class SignerError extends Error {
  /** `sessionGone`: the open session no longer reaches the key (drop it, open afresh). */
  constructor(readonly step: SignerStep, readonly reason: string, readonly sessionGone = false) {
    super(`${step}: ${reason}`);
    this.name = "SignerError";
  }
}

let binding: { ok: true; module: Pkcs11Module } | { ok: false; reason: string } | undefined;

/** pkcs11js, an optional native dependency: loaded on first use; why not, when it cannot be. */
export function loadPkcs11Binding(): { ok: true; module: Pkcs11Module } | { ok: false; reason: string } {
  if (!binding) {
    try {
      binding = { ok: true, module: createRequire(import.meta.url)("pkcs11js") as Pkcs11Module };
    } catch (error) {
      const message = String((error as Error)?.message ?? error).split("\n")[0]!;
      binding = { ok: false, reason: /Cannot find module 'pkcs11js'/.test(message) ? "the pkcs11js package is not installed" : `the pkcs11js binding does not load (${message})` };
    }
  }
  return binding;
}

/** One loaded library per module path for the whole process (C_Initialize once), with a generation that changes when it is re-initialised. */
interface LoadedModule {
  lib: Pkcs11;
  generation: number;
  initialized: boolean;
}
const modules = new Map<string, LoadedModule>();

function moduleFor(path: string): LoadedModule {
  const loaded = loadPkcs11Binding();
  if (!loaded.ok) throw new SignerError("module", `PKCS#11 unavailable: ${loaded.reason}`);
  let one = modules.get(path);
  if (!one) {
    const lib = new loaded.module.PKCS11();
    try {
      lib.load(path);
    } catch (error) {
      // The loader's message names the file: the URI's query is never shown, so neither is its path.
      throw new SignerError("module", `cannot load the library at module-path (${reasonOf(error).split(path).join("<module-path>")})`);
    }
    one = { lib, generation: 0, initialized: false };
    modules.set(path, one);
  }
  if (!one.initialized) {
    try {
      one.lib.C_Initialize();
    } catch (error) {
      if (reasonOf(error) !== "CKR_CRYPTOKI_ALREADY_INITIALIZED") throw new SignerError("module", `C_Initialize failed (${reasonOf(error)})`);
    }
    one.initialized = true;
    one.generation += 1;
  }
  return one;
}

/** Finalises and re-initialises the library on next use: a token inserted or re-initialised since is seen only then. */
function reinitialize(one: LoadedModule): void {
  if (!one.initialized) return;
  try {
    one.lib.C_Finalize();
  } catch {
    // already gone: initialised afresh on next use
  }
  one.initialized = false;
}

function reasonOf(error: unknown): string {
  const e = error as { message?: string; code?: number } | null;
  const ckr = /CKR_[A-Z0-9_]+/.exec(e?.message ?? "")?.[0];
  return ckr ?? String(e?.message ?? error).split("\n")[0]!.slice(0, 200);
}

// The answers that mean the session, the login or the token went away: drop the session, open afresh.
const SESSION_GONE = new Set([
  "CKR_SESSION_HANDLE_INVALID", "CKR_SESSION_CLOSED", "CKR_TOKEN_NOT_PRESENT", "CKR_TOKEN_NOT_RECOGNIZED", "CKR_DEVICE_REMOVED",
  "CKR_DEVICE_ERROR", "CKR_USER_NOT_LOGGED_IN", "CKR_OBJECT_HANDLE_INVALID", "CKR_KEY_HANDLE_INVALID", "CKR_CRYPTOKI_NOT_INITIALIZED",
  "CKR_SLOT_ID_INVALID", "CKR_GENERAL_ERROR",
]);

/** The DER DigestInfo prefix of a SHA-256 hash (RFC 8017, section 9.2, note 1). */
const SHA256_DIGEST_INFO = Buffer.from("3031300d060960864801650304020105000420", "hex");

/** The pause after a failure before the key store is asked again; after a refused PIN, longer. */
export const RETRY_MS = 1000;
export const PIN_RETRY_MS = 30_000;

export interface Pkcs11SignerOptions {
  ref: Pkcs11KeyRef;
  /** The PIN from the setting (HOST_APP_KEY_PIN), used when the URI carries none. */
  pin: string | null;
  /** Longest wait for one C_Sign before the step fails (a hung key store). */
  signTimeoutMs?: number;
  /** The clock of the pause after a failure (tests give their own). */
  now?: () => number;
}

export interface Pkcs11Signer {
  /** RSASSA-PKCS1-v1_5 with SHA-256 over `data`, made by the token. */
  sign(data: Buffer): Promise<Buffer>;
  /** Opens the session and finds the key (no signature): what /readyz and doctor check. */
  open(): Promise<void>;
  /** The last failure, or null after a success (or before any attempt). */
  readonly lastFailure: SignerError | null;
  close(): void;
}

export function createPkcs11Signer(options: Pkcs11SignerOptions): Pkcs11Signer {
  const { ref } = options;
  const timeoutMs = options.signTimeoutMs ?? 10_000;
  const now = options.now ?? Date.now;
  let state: { module: LoadedModule; generation: number; session: Handle; key: Handle } | null = null;
  let lastFailure: SignerError | null = null;
  let retryAt = 0;
  // One operation at a time on the session (PKCS#11 allows one active sign per session).
  let queue: Promise<unknown> = Promise.resolve();

  const pin = (): string | null => {
    if (ref.pinValue !== undefined) return ref.pinValue;
    if (ref.pinSource !== undefined) {
      try {
        return readFileSync(ref.pinSource, "utf8").replace(/\r?\n$/, "");
      } catch (error) {
        throw new SignerError("login", `cannot read the pin-source file (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
      }
    }
    return options.pin;
  };

  const findSlot = (lib: Pkcs11): Handle | null => {
    const slots = lib.C_GetSlotList(true);
    for (const [index, slot] of slots.entries()) {
      if (ref.token.slotId !== undefined && slot.readUIntLE(0, Math.min(slot.length, 6)) !== ref.token.slotId && index !== ref.token.slotId) continue;
      const info = lib.C_GetTokenInfo(slot);
      if (ref.token.label !== undefined && info.label.trimEnd() !== ref.token.label) continue;
      if (ref.token.serial !== undefined && info.serialNumber.trimEnd() !== ref.token.serial) continue;
      if (ref.token.manufacturer !== undefined && info.manufacturerID.trimEnd() !== ref.token.manufacturer) continue;
      if (ref.token.model !== undefined && info.model.trimEnd() !== ref.token.model) continue;
      return slot;
    }
    return null;
  };

  /** The private key objects the URI names (handles only: no attribute of the key is read). */
  const findKeys = (lib: Pkcs11, P: Pkcs11Module, session: Handle): Handle[] => {
    const template: Array<{ type: number; value: number | string | Buffer }> = [{ type: P.CKA_CLASS, value: P.CKO_PRIVATE_KEY }];
    if (ref.object !== undefined) template.push({ type: P.CKA_LABEL, value: ref.object });
    if (ref.id !== undefined) template.push({ type: P.CKA_ID, value: ref.id });
    try {
      lib.C_FindObjectsInit(session, template);
      const found = lib.C_FindObjects(session, 2);
      lib.C_FindObjectsFinal(session);
      return found;
    } catch (error) {
      throw new SignerError("object", `C_FindObjects failed (${reasonOf(error)})`);
    }
  };

  const drop = () => {
    if (!state) return;
    const { module, generation, session } = state;
    state = null;
    if (module.initialized && module.generation === generation) {
      try {
        module.lib.C_CloseSession(session);
      } catch {
        // the token already closed it
      }
    }
  };

  const openNow = (mayReinitialize: boolean) => {
    if (state && state.module.initialized && state.module.generation === state.generation) return state;
    state = null;
    const module = moduleFor(ref.modulePath);
    const { lib } = module;
    const loaded = loadPkcs11Binding() as { ok: true; module: Pkcs11Module };
    const P = loaded.module;
    let slot: Handle | null;
    try {
      slot = findSlot(lib);
    } catch (error) {
      slot = null;
      if (!mayReinitialize) throw new SignerError("slot", `listing the tokens failed (${reasonOf(error)})`);
    }
    if (!slot) {
      // A token re-initialised or inserted since C_Initialize is listed only after a new C_Initialize.
      if (mayReinitialize) {
        reinitialize(module);
        return openNow(false);
      }
      throw new SignerError("slot", "no token matches the URI's token attributes");
    }
    let session: Handle;
    try {
      session = lib.C_OpenSession(slot, P.CKF_SERIAL_SESSION);
    } catch (error) {
      throw new SignerError("slot", `C_OpenSession failed (${reasonOf(error)})`);
    }
    try {
      const code = pin();
      try {
        lib.C_Login(session, P.CKU_USER, code ?? undefined);
      } catch (error) {
        const reason = reasonOf(error);
        if (reason !== "CKR_USER_ALREADY_LOGGED_IN") throw new SignerError("login", `C_Login failed (${reason})`);
      }
      const found = findKeys(lib, P, session);
      if (found.length === 0) throw new SignerError("object", "no private key matches the URI's object/id");
      if (found.length > 1) throw new SignerError("object", "more than one private key matches the URI's object/id: name one");
      state = { module, generation: module.generation, session, key: found[0]! };
      return state;
    } catch (error) {
      try {
        lib.C_CloseSession(session);
      } catch {
        // gone already
      }
      throw error;
    }
  };

  // CKM_SHA256_RSA_PKCS (the token hashes); a store that offers only CKM_RSA_PKCS (Cloud KMS's
  // kmsp11) is given the DigestInfo of the SHA-256 hash, built here: the same signature.
  let rawOnly = false;
  const signOnce = (data: Buffer, open: NonNullable<typeof state>): Promise<Buffer> => {
    const P = (loadPkcs11Binding() as { ok: true; module: Pkcs11Module }).module;
    const { lib } = open.module;
    let input = data;
    try {
      if (!rawOnly) {
        try {
          lib.C_SignInit(open.session, { mechanism: P.CKM_SHA256_RSA_PKCS }, open.key);
        } catch (error) {
          if (reasonOf(error) !== "CKR_MECHANISM_INVALID") throw error;
          rawOnly = true;
        }
      }
      if (rawOnly) {
        lib.C_SignInit(open.session, { mechanism: P.CKM_RSA_PKCS }, open.key);
        input = Buffer.concat([SHA256_DIGEST_INFO, createHash("sha256").update(data).digest()]);
      }
    } catch (error) {
      return Promise.reject(new SignerError("sign", `C_SignInit failed (${reasonOf(error)})`));
    }
    return new Promise<Buffer>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(new SignerError("sign", `no signature within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      // The callback form runs C_Sign off the event loop (a slow key store blocks no request).
      lib.C_Sign(open.session, input, Buffer.alloc(1024), (error, signature) => {
        clearTimeout(timer);
        if (settled) return;
        if (error) reject(new SignerError("sign", `C_Sign failed (${reasonOf(error)})`));
        else resolve(Buffer.from(signature));
      });
    });
  };

  const recoverable = (error: unknown) => error instanceof SignerError && (error.sessionGone || SESSION_GONE.has(/CKR_[A-Z0-9_]+/.exec(error.reason)?.[0] ?? ""));

  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => undefined);
    return run;
  };

  const attempt = async <T>(work: (open: NonNullable<typeof state>) => Promise<T>): Promise<T> => {
    // After a failure the key store is asked again only after a pause: a dead store is not
    // hammered by every request, and a wrong PIN is not retried into a locked token.
    if (lastFailure && now() < retryAt) throw lastFailure;
    try {
      const result = await runOnce(work).catch(async (error: unknown) => {
        if (!recoverable(error)) throw error;
        // The session or the token went away: open afresh once (re-initialising the library if the token is not listed).
        drop();
        return runOnce(work);
      });
      lastFailure = null;
      return result;
    } catch (error) {
      if (error instanceof SignerError) {
        if (recoverable(error) || error.step === "slot" || error.step === "sign") {
          drop();
          const module = modules.get(ref.modulePath);
          if (module && (error.step === "slot" || /TOKEN|DEVICE|CRYPTOKI/.test(error.reason))) reinitialize(module);
        }
        lastFailure = error;
        retryAt = now() + (/CKR_PIN_(INCORRECT|LOCKED|EXPIRED)/.test(error.reason) ? PIN_RETRY_MS : RETRY_MS);
        throw error;
      }
      lastFailure = new SignerError("sign", reasonOf(error));
      retryAt = now() + RETRY_MS;
      throw lastFailure;
    }
  };
  const runOnce = async <T>(work: (open: NonNullable<typeof state>) => Promise<T>): Promise<T> => {
    let open: NonNullable<typeof state>;
    try {
      open = openNow(true);
    } catch (error) {
      if (error instanceof SignerError) throw error;
      throw new SignerError("slot", reasonOf(error));
    }
    return work(open);
  };

  return {
    sign: (data) => serialized(() => attempt((open) => signOnce(data, open))),
    // The session's state asked of the token: a token removed since the last signature shows here.
    // The session's state and the key asked of the token again: a token removed or re-created
    // since the last signature shows here (SoftHSM2 keeps the session but no longer the key).
    open: () => serialized(() => attempt(async (open) => {
      const P = (loadPkcs11Binding() as { ok: true; module: Pkcs11Module }).module;
      try {
        open.module.lib.C_GetSessionInfo(open.session);
      } catch (error) {
        throw new SignerError("slot", `C_GetSessionInfo failed (${reasonOf(error)})`, true);
      }
      let found: Handle[];
      try {
        found = findKeys(open.module.lib, P, open.session);
      } catch (error) {
        throw new SignerError("object", (error as SignerError).reason, true);
      }
      if (!found.some((handle) => handle.equals(open.key))) throw new SignerError("object", "the private key is no longer found", true);
    })),
    get lastFailure() {
      return lastFailure;
    },
    close: () => drop(),
  };
}
