// Fault injection: consulted before the normal route table, so any endpoint (OIDC, REST,
// GraphQL) can be made to fail, hang, answer garbage or drop the connection.
import type { FaultHandle, FaultRegistry, FaultResponse, FaultSpec } from "./types.js";

interface ActiveFault {
  spec: FaultSpec;
  remaining: number;
}

export interface FaultTable extends FaultRegistry {
  /** Find the first fault matching this request (and the installation of its token, if any) and use up one of its `times`. */
  take(method: string, path: string, installationId?: number, body?: unknown): FaultResponse | undefined;
}

export function createFaultTable(): FaultTable {
  let active: ActiveFault[] = [];

  const matches = (spec: FaultSpec, method: string, path: string, installationId: number | undefined, body: unknown): boolean => {
    if (spec.method && spec.method.toUpperCase() !== method.toUpperCase()) return false;
    if (spec.installationId !== undefined && spec.installationId !== installationId) return false;
    if (spec.body && !spec.body(body)) return false;
    if (typeof spec.path === "string") return spec.path === path;
    spec.path.lastIndex = 0; // a /g or /y RegExp would otherwise remember where it stopped
    return spec.path.test(path);
  };

  return {
    add(spec: FaultSpec): FaultHandle {
      const entry: ActiveFault = { spec, remaining: spec.times ?? Infinity };
      active.push(entry);
      return {
        remove: () => {
          active = active.filter((f) => f !== entry);
        },
        get remaining() {
          return entry.remaining;
        },
      };
    },
    clear() {
      active = [];
    },
    get active() {
      return active.map((f) => f.spec);
    },
    take(method, path, installationId, body) {
      const entry = active.find((f) => f.remaining > 0 && matches(f.spec, method, path, installationId, body));
      if (!entry) return undefined;
      entry.remaining -= 1;
      if (entry.remaining <= 0) active = active.filter((f) => f !== entry);
      return entry.spec.respond;
    },
  };
}
