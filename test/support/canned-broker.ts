// A canned broker on loopback for the bundled action's hostile-answer tests: one server that plays
// the runner's ID-token endpoint, the broker's POST /token (answered by the test's handler, with
// the raw response in hand so it can cut an answer off or never finish it) and the platform's
// DELETE /installation/token (GITHUB_API_URL points here too). It records every request.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeAll } from "@jest/globals";
import { node24 } from "./action-node24.js";

export interface CannedRequest {
  method: string;
  path: string;
  authorization?: string;
  body: string;
}

/** What POST /token gets: a JSON answer, or the raw response for shapes JSON cannot describe. */
export type TokenHandler = (call: number, res: ServerResponse) => { status: number; body: unknown; headers?: Record<string, string> } | "raw";

export interface CannedBroker {
  url: string;
  requests: CannedRequest[];
  tokenPosts(): number;
  revocations(): CannedRequest[];
  /** The job's variables pointing at this server (ID-token endpoint, API base, repository). */
  jobEnv(): Record<string, string>;
  close(): Promise<void>;
}

/** The OIDC token the canned endpoint hands out: a JWT's shape, so the log scan can find it. */
export const CANNED_JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImNhbm5lZCJ9.eyJyZXBvc2l0b3J5Ijoib2N0by1vcmcvYXBwIn0.Y2FubmVkLXNpZ25hdHVyZQ";

export async function startCannedBroker(onToken: TokenHandler): Promise<CannedBroker> {
  const requests: CannedRequest[] = [];
  let posts = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request: CannedRequest = { method: req.method ?? "", path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8"), ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) };
      requests.push(request);
      const path = request.path.split("?")[0];
      if (request.method === "GET" && path === "/_actions/idtoken") return json(res, 200, { value: CANNED_JWT });
      if (request.method === "DELETE" && path === "/installation/token") {
        res.writeHead(204);
        return res.end();
      }
      if (request.method === "POST" && path === "/token") {
        posts += 1;
        const answer = onToken(posts, res);
        if (answer !== "raw") json(res, answer.status, answer.body, answer.headers);
        return;
      }
      json(res, 404, { message: "Not Found" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    tokenPosts: () => posts,
    revocations: () => requests.filter((r) => r.method === "DELETE"),
    jobEnv: () => ({
      GITHUB_REPOSITORY: "octo-org/app",
      GITHUB_API_URL: url,
      ACTIONS_ID_TOKEN_REQUEST_URL: `${url}/_actions/idtoken?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: "canned-request-token",
      TOKENSMITH_RETRY_BASE_MS: "10",
    }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

/** The runner's reading of a `::error::` line's data: %0D, %0A, %25 unescaped (what the UI shows). */
export function runnerData(line: string): string {
  return line.replace(/^::[a-z-]+::/, "").replace(/%0D/g, "\r").replace(/%0A/g, "\n").replace(/%25/g, "%");
}

/** A good answer, one hour ahead, for the canned broker to vary. */
export function goodAnswer(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    token: "ghs_cannedTokenForTheHostileAnswerTests0001",
    expires_at: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    repository: "octo-org/app",
    installation_id: 4242,
    app_slug: "tokensmith-release",
    ...overrides,
  };
}

/**
 * Registers a bundled-action test file's hooks: the Node 24 binary found before all (node()), and
 * every broker started through canned() closed after each test.
 */
export function useCannedBrokers(): { node: () => string; canned: (onToken?: TokenHandler) => Promise<CannedBroker>; closeAfterTest: (close: () => Promise<void>) => void } {
  let binary = "";
  const closers: Array<() => Promise<void>> = [];
  beforeAll(() => {
    binary = node24();
  }, 360_000);
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  return {
    node: () => binary,
    async canned(onToken = () => ({ status: 200, body: goodAnswer() })) {
      const broker = await startCannedBroker(onToken);
      closers.push(() => broker.close());
      return broker;
    },
    closeAfterTest: (close) => void closers.push(close),
  };
}
