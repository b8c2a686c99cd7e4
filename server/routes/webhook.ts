import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { BrokerContext } from "../context.js";

/** POST /webhook: not built yet; answers its spec'd "disabled" code, never a made-up success. */
export function webhookRoute(_ctx: BrokerContext): RequestHandler[] {
  return [(_req, _res, next) => next(new BrokerError("webhook_disabled"))];
}
