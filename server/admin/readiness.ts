/** Whether the broker takes traffic: starting until it listens, draining from SIGTERM on. */
type ReadinessState = "starting" | "ready" | "draining";

export function createReadiness() {
  let state: ReadinessState = "starting";
  return {
    get state(): ReadinessState {
      return state;
    },
    listening(): void {
      if (state === "starting") state = "ready";
    },
    draining(): void {
      state = "draining";
    },
  };
}

export type Readiness = ReturnType<typeof createReadiness>;
