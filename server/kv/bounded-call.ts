/**
 * One store call bounded by `timeoutMs`, never throwing: a timeout or an error is told to `warn`
 * and answered with `fallback` (the broker then behaves as if the binding were unset).
 */
export function boundedCall(timeoutMs: number, warn: (op: string, error: unknown) => void) {
  return async <R>(op: string, fallback: R, run: () => Promise<R>): Promise<R> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        run(),
        new Promise<R>((_, reject) => {
          timer = setTimeout(() => reject(new Error("timeout")), timeoutMs);
        }),
      ]);
    } catch (error) {
      warn(op, error);
      return fallback;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** A warning at most every 5 s: an outage must not flood the log. */
export function throttledWarning(warn: (op: string, error: unknown) => void): (op: string, error: unknown) => void {
  let lastWarned = 0;
  return (op, error) => {
    const now = Date.now();
    if (now - lastWarned < 5000) return;
    lastWarned = now;
    warn(op, error);
  };
}
