import type { ReleasesResponse } from "../../shared/types.js";
import { explainBrokerAnswer, explainUnreachable, type DashboardErrorBody } from "./explain-broker-answer.js";

export interface BrokerSource {
  /** The broker's origin, e.g. https://tokensmith.example.com */
  brokerUrl: URL;
  /** The broker's PROCESS_TRIGGER_SECRET: sent to the broker and nowhere else. */
  secret: string;
  fetch: typeof fetch;
  /** A crawl of a large fleet takes a while; a cached answer is instant. */
  timeoutMs: number;
}

type BrokerAnswer = { status: 200; body: ReleasesResponse } | { status: number; body: DashboardErrorBody };

/** GET {broker}/releases with the bearer, server-side; whatever happens, an answer fit for the browser. */
export async function fetchBrokerReleases(source: BrokerSource): Promise<BrokerAnswer> {
  const endpoint = new URL("releases", source.brokerUrl);
  let status: number;
  let text: string;
  try {
    const response = await source.fetch(endpoint, {
      headers: { authorization: `Bearer ${source.secret}`, accept: "application/json" },
      // A redirect would carry the bearer elsewhere; the broker never sends one, so it is an odd answer.
      redirect: "manual",
      signal: AbortSignal.timeout(source.timeoutMs),
    });
    status = response.status;
    text = await response.text();
  } catch (error) {
    return explainUnreachable(endpoint.origin, error, source.timeoutMs);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (status === 200 && isReleasesResponse(body)) return { status: 200, body };
  return explainBrokerAnswer(status, body);
}

function isReleasesResponse(body: unknown): body is ReleasesResponse {
  const answer = body as Partial<ReleasesResponse> | undefined;
  return typeof answer === "object" && answer !== null && typeof answer.generated_at === "string" && Array.isArray(answer.repos);
}
