// The resolve hook behind deny-modules.mjs where module.registerHooks is missing (import only).
let denied = [];

export function initialize(data) {
  denied = data.denied;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const name = denied.find((module) => resolved.url.includes(`/node_modules/${module}/`));
  if (name !== undefined) throw new Error(`${name} may not be loaded in this process (TOKENSMITH_DENY_MODULES)`);
  return resolved;
}
