// The redactor lives in shared/ (the action prints its URLs through it too); the broker's modules import it from here.
export { redactUrl, redactUrlCredentials } from "../shared/redact-url.js";
