// GitHub's secondary rate limits, on by default with GitHub's own values, so a test can prove the
// broker stays inside them (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
// - no more than 100 concurrent requests (REST and GraphQL together);
// - no more than 900 points a minute for REST endpoints, per App or installation (a GET, HEAD or
//   OPTIONS costs 1 point, any other method 5);
// - no more than 2,000 points a minute for the GraphQL endpoint, a budget of its own (a query
//   costs 1 point, a mutation 5);
// Over either, GitHub answers 403 with its secondary-limit message (a `retry-after` header when it
// names a wait). The content-creation limit (80 a minute) lives with the routes that create content.
import type { RequestAuth, RouteResult } from "./types.js";

const DOCS_SECONDARY = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits";
const SECONDARY_MESSAGE = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID";

export interface SecondaryLimitValues {
  /** Requests in flight at once (the one arriving included) before a 403. GitHub: 100. */
  concurrency: number;
  /** REST points per App or installation in any window. GitHub: 900. */
  pointsPerMinute: number;
  /** GraphQL points per App or installation in any window. GitHub: 2,000. */
  graphqlPointsPerMinute: number;
  /** The points window. GitHub: a minute; a test may scale it down (with the broker's, never alone). */
  pointsWindowMs: number;
}

const GITHUB_SECONDARY_LIMITS: SecondaryLimitValues = { concurrency: 100, pointsPerMinute: 900, graphqlPointsPerMinute: 2000, pointsWindowMs: 60_000 };

export interface SecondaryLimits {
  /** The values in force; a test or the bench may change them (never above GitHub's in a test). */
  values: SecondaryLimitValues;
  /** Requests being handled now, and the most there ever were at once (since the last reset). */
  readonly inFlight: number;
  readonly peakInFlight: number;
  resetPeak(): void;
  /** Forget the points spent so far, as if a minute had passed: isolates the tests sharing one simulator. */
  forgetSpentPoints(): void;
  /** How many requests were refused by each limit (`points`: REST's; `graphqlPoints`: GraphQL's). */
  readonly refused: { concurrency: number; points: number; graphqlPoints: number };
  /**
   * A request arrived: count it in flight (call `leave` when it is answered or dropped) and judge
   * it; an answer is a 403 to send instead of handling it.
   */
  arrive(input: { method: string; path: string; body?: unknown; auth: RequestAuth; requestId: string }): { leave(): void; refusal?: RouteResult };
}

/**
 * `principalOf` names whose budget a request spends (the App, or the installation behind a token);
 * null: not the REST API's budget (the OIDC issuer, unauthenticated calls).
 */
export function createSecondaryLimits(now: () => number, principalOf: (auth: RequestAuth) => string | null, values: Partial<SecondaryLimitValues> = {}): SecondaryLimits {
  const limits: SecondaryLimitValues = { ...GITHUB_SECONDARY_LIMITS, ...values };
  let inFlight = 0;
  let peak = 0;
  const refused = { concurrency: 0, points: 0, graphqlPoints: 0 };
  /** Principal → (time, points) spent in the last minute, oldest first. */
  const spent = new Map<string, Array<{ at: number; points: number }>>();

  const refusal = (requestId: string, retryAfterSeconds: number): RouteResult => ({
    status: 403,
    headers: { "retry-after": String(retryAfterSeconds) },
    body: { message: `${SECONDARY_MESSAGE} ${requestId}.`, documentation_url: DOCS_SECONDARY, status: "403" },
  });

  return {
    values: limits,
    get inFlight() {
      return inFlight;
    },
    get peakInFlight() {
      return peak;
    },
    resetPeak() {
      peak = inFlight;
    },
    forgetSpentPoints() {
      spent.clear();
    },
    refused,
    arrive({ method, path, body, auth, requestId }) {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        inFlight -= 1;
      };
      if (inFlight > limits.concurrency) {
        refused.concurrency += 1;
        return { leave, refusal: refusal(requestId, 60) };
      }
      const principal = principalOf(auth);
      if (principal === null) return { leave };
      const graphql = path.endsWith("/graphql");
      const budget = graphql ? limits.graphqlPointsPerMinute : limits.pointsPerMinute;
      if (budget === Infinity) return { leave };
      const at = now();
      const points = graphql ? (isMutation(body) ? 5 : 1) : ["GET", "HEAD", "OPTIONS"].includes(method) ? 1 : 5;
      const key = graphql ? `graphql:${principal}` : principal;
      const history = (spent.get(key) ?? []).filter((entry) => entry.at > at - limits.pointsWindowMs);
      spent.set(key, history);
      const used = history.reduce((sum, entry) => sum + entry.points, 0);
      if (used + points > budget) {
        if (graphql) refused.graphqlPoints += 1;
        else refused.points += 1;
        const oldest = history[0]?.at ?? at;
        return { leave, refusal: refusal(requestId, Math.max(1, Math.ceil((oldest + limits.pointsWindowMs - at) / 1000))) };
      }
      history.push({ at, points });
      return { leave };
    },
  };
}

/** A GraphQL request whose document is a mutation (GitHub charges it 5 points, a query 1). */
function isMutation(body: unknown): boolean {
  const query = body && typeof body === "object" ? (body as { query?: unknown }).query : undefined;
  return typeof query === "string" && /^\s*mutation\b/.test(query.replace(/^(\s*#[^\n]*\n)*/, ""));
}
