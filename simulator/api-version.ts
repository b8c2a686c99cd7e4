// GitHub's REST API versions (https://docs.github.com/rest/about-the-rest-api/api-versions): a
// request names one in `X-GitHub-Api-Version`; without the header GitHub answers as 2022-11-28, and
// a version it does not support is a 400 before anything else is looked at. The answer's wording is
// GitHub's own, read off the live API (`errors` is a string there, not the usual array).
import { DOCS_ROOT } from "./router.js";
import type { RecordedRequest, RouteResult } from "./types.js";

/** Newest first, as GitHub lists them in the 400. */
const SUPPORTED_API_VERSIONS = ["2026-03-10", "2022-11-28"] as const;

/**
 * Notes on `record` the version a REST request named (`apiVersion`: its header, null when absent:
 * GitHub accepts that, so tests assert the broker always names one) and answers GitHub's 400 when
 * it names one GitHub does not support; undefined lets the request through.
 */
export function judgeApiVersion(record: RecordedRequest): RouteResult | undefined {
  const header = record.headers["x-github-api-version"];
  const named = Array.isArray(header) ? header.join(", ") : header;
  record.apiVersion = named ?? null;
  if (named === undefined || (SUPPORTED_API_VERSIONS as readonly string[]).includes(named)) return undefined;
  const [newest, ...older] = SUPPORTED_API_VERSIONS;
  const supported = `"${newest}" (most recent)${older.map((version) => ` and "${version}"`).join("")}`;
  return {
    status: 400,
    body: {
      message: "Bad Request",
      errors: `The version you specified in the "X-GitHub-API-Version" request header, "${named}", is not a supported version. The following versions are currently supported: ${supported}.`,
      documentation_url: DOCS_ROOT,
      status: "400",
    },
  };
}
