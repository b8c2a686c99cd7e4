import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { BrokerContext } from "../context.js";

/** GET /releases: not built yet; answers its spec'd "disabled" code, never a made-up success. */
export function releasesRoute(_ctx: BrokerContext): RequestHandler[] {
  return [(_req, _res, next) => next(new BrokerError("releases_disabled"))];
}
