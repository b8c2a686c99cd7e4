export * from "./error-codes.js";
export * from "./broker-error.js";
export * from "./types.js";
export * from "./token-permissions.js";
export * from "./requested-permissions.js";
export * from "./repository-names.js";
