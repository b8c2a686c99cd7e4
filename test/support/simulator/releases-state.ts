// Releases per repository (GraphQL release fields). Filled in by the /releases work.
import type { Simulator } from "./types.js";

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ReleasesApi {}

export function registerReleases(_sim: Simulator): ReleasesApi {
  return {};
}
