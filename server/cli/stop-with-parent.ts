/**
 * Under `npx tokensmith serve`, npx runs the broker through a shell: a SIGTERM to npx (a process
 * manager stopping it) ends npx and the shell, and the broker would run on, orphaned, holding its
 * port (docs/deploying.md#3-install-and-run). So when npx started it (npm sets `npm_command=exec`),
 * the broker watches its parent and, once that is gone, stops as on SIGTERM: it drains and exits.
 * Run any other way (a container, systemd, `node bin/tokensmith.js`) nothing is watched, so a
 * broker started with `nohup … &` outlives its shell as before.
 */
export function stopWithParent(options: { env?: NodeJS.ProcessEnv; intervalMs?: number } = {}): void {
  const env = options.env ?? process.env;
  if (env.npm_command !== "exec") return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.stderr.write(`${JSON.stringify({ level: "warn", time: new Date().toISOString(), msg: "parent process gone (npx was stopped): stopping as on SIGTERM" })}\n`);
    process.kill(process.pid, "SIGTERM");
  }, options.intervalMs ?? 500);
  timer.unref(); // never what keeps the process alive
}
