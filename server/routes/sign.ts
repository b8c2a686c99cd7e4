import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { BrokerContext } from "../context.js";

/** POST /sign: not built yet; answers its spec'd "disabled" code, never a made-up success. */
export function signRoute(_ctx: BrokerContext): RequestHandler[] {
  return [(_req, _res, next) => next(new BrokerError("sign_disabled"))];
}
