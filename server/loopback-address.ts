// The loopback test lives in shared/ (the action refuses plain http to other hosts with it); the broker's modules import it from here.
export { isLoopbackHost, isLoopbackHostHeader } from "../shared/loopback-address.js";
