// `tokensmith policy check [FILE]` and `tokensmith policy explain --claims FILE …`: the broker's own
// engine (server/policy/), offline. check: exit 0 valid (warnings printed), 1 invalid, 2 usage or
// unreadable file. explain: exit 0 when a rule holds, 1 when the job would be refused, 2 usage.
import { readFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseTokenPermissions } from "../../shared/token-permissions.js";
import { readRepositoryName } from "../../shared/repository-names.js";
import { ruleFails } from "../policy/check-policy.js";
import { consentDenied, consents, decideConsent } from "../policy/decide-consent.js";
import { createPolicyCompiler, type PolicyCompiler } from "../policy/compile-policy.js";
import { decidePolicy } from "../policy/decide-policy.js";
import { POLICY_FILES, type CompiledPolicy, type PolicyKind } from "../policy/policy-types.js";
import { grantPermissions } from "../token/grant-permissions.js";
import { CEILING_TOKEN_PERMISSIONS } from "../token/permissions-to-mint.js";
import type { CommandIo } from "./releases-command.js";

const POLICY_USAGE = `Usage: tokensmith policy check [FILE] [--owner]
       tokensmith policy explain --claims FILE [--repo owner/name] [--policy FILE] [--owner-policy FILE] [--rule NAME]
       tokensmith policy explain --claims FILE --consent NAME [--policy FILE] [--owner-policy FILE]

  check    Validate a policy file offline (default ${POLICY_FILES.repository}; a file named
           tokensmith-org.yml, or --owner, is checked as an owner policy). Line numbers on every
           problem; warns (without failing) on a write grant without an event condition, a rule
           trusting actor or head_ref that can match pull_request_target, workflow pinned with
           pull_request, and patterns over 256 characters. Exit 0 valid, 1 invalid.
  explain  Which rule holds for a job's OIDC claims (a JSON object, or the JWT itself: its payload
           is read, not verified), the grant (TOKEN_PERMISSIONS from the environment ∩ the rules;
           the installation may narrow it further), and why each other rule does not.
           Exit 0 when a rule holds, 1 when the broker would answer policy_denied or policy_invalid.
           --consent NAME: the policy is repository NAME's (of the claims' owner), named in another
           repository's repositories: does it consent to that job (the claims' repository), and
           what does it lend? Exit 0 when it consents, 1 when the broker would deny it.
`;

export async function policyCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        claims: { type: "string" }, repo: { type: "string" }, policy: { type: "string" }, "owner-policy": { type: "string" },
        rule: { type: "string" }, owner: { type: "boolean" }, consent: { type: "string" }, help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    io.err(`tokensmith policy: ${(error as Error).message}\n\n${POLICY_USAGE}`);
    return 2;
  }
  const [sub, ...rest] = parsed.positionals;
  if (parsed.values.help) {
    io.out(POLICY_USAGE);
    return 0;
  }
  const compiler = createPolicyCompiler();
  if (sub === "check" && rest.length <= 1) return check(compiler, rest[0] ?? POLICY_FILES.repository, parsed.values.owner ? "owner" : undefined, io);
  if (sub === "explain" && rest.length === 0 && parsed.values.claims) {
    return explain(compiler, { claims: parsed.values.claims, repo: parsed.values.repo, policy: parsed.values.policy, ownerPolicy: parsed.values["owner-policy"], rule: parsed.values.rule, consent: parsed.values.consent }, io);
  }
  io.err(`tokensmith policy: ${sub === "explain" ? "--claims is required" : `unknown command: ${["policy", ...parsed.positionals].join(" ")}`}\n\n${POLICY_USAGE}`);
  return 2;
}

const kindOf = (file: string, forced?: PolicyKind): PolicyKind => forced ?? (basename(file) === basename(POLICY_FILES.owner) ? "owner" : "repository");

/** A file name as given (and as printed), read from io.cwd when that is set. */
const inCwd = (file: string, io: CommandIo): string => (io.cwd === undefined ? file : resolve(io.cwd, file));

async function readText(file: string, io: CommandIo): Promise<string | null> {
  try {
    return await readFile(inCwd(file, io), "utf8");
  } catch (error) {
    io.err(`tokensmith policy: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}\n`);
    return null;
  }
}

async function check(compiler: PolicyCompiler, file: string, forced: PolicyKind | undefined, io: CommandIo): Promise<number> {
  const text = await readText(file, io);
  if (text === null) return 2;
  const kind = kindOf(file, forced);
  const result = compiler.compile(text, kind, file);
  if (!result.ok) {
    io.err(`${result.detail}\n`);
    return 1;
  }
  for (const warning of result.policy.warnings) io.err(`warning: ${warning}\n`);
  io.out(`${file}: valid ${kind} policy, ${result.policy.rules.length} rule${result.policy.rules.length === 1 ? "" : "s"}: ${result.policy.rules.map((r) => r.name).join(", ")}\n`);
  return 0;
}

interface ExplainOptions {
  claims: string;
  repo?: string;
  policy?: string;
  ownerPolicy?: string;
  rule?: string;
  /** The policy is this repository's (a name), asked to consent to the claims' repository. */
  consent?: string;
}

async function explain(compiler: PolicyCompiler, options: ExplainOptions, io: CommandIo): Promise<number> {
  const raw = await readText(options.claims, io);
  if (raw === null) return 2;
  const claims = readClaims(raw.trim());
  if (!claims) {
    io.err(`tokensmith policy: ${options.claims} is neither a JSON object of claims nor a JWT\n`);
    return 2;
  }
  const repository = options.repo ?? (typeof claims.repository === "string" ? claims.repository : undefined);
  if (!repository || !/^[^/\s]+\/[^/\s]+$/.test(repository)) {
    io.err("tokensmith policy: --repo owner/name is required (the claims name no repository)\n");
    return 2;
  }
  const policies: Partial<Record<PolicyKind, CompiledPolicy>> = {};
  for (const [kind, file, explicit] of [["repository", options.policy ?? POLICY_FILES.repository, options.policy !== undefined], ["owner", options.ownerPolicy, true]] as const) {
    if (file === undefined) continue;
    const text = explicit ? await readText(file, io) : await readFile(inCwd(file, io), "utf8").catch(() => null);
    if (text === null) {
      if (explicit) return 2;
      continue;
    }
    const compiled = compiler.compile(text, kind, file);
    if (!compiled.ok) {
      io.out(`refused: 403 policy_invalid: ${compiled.detail}\n`);
      return 1;
    }
    policies[kind] = compiled.policy;
  }
  if (options.consent !== undefined) return explainConsent(policies, claims, repository, options.consent, io);
  const name = repository.split("/")[1]!;
  const permissions = parseTokenPermissions(io.env.TOKEN_PERMISSIONS);
  if (!permissions.ok) {
    io.err(`tokensmith policy: TOKEN_PERMISSIONS unusable: ${permissions.problem}\n`);
    return 2;
  }
  const decision = decidePolicy({ mode: "optional", repository: policies.repository ?? null, owner: policies.owner ?? null, claims, rule: options.rule, repositoryName: name });
  for (const [kind, policy] of Object.entries(policies) as Array<[PolicyKind, CompiledPolicy]>) {
    if (kind === "repository" && policies.owner?.ignoreRepositoryPolicies) {
      io.out(`${kind} policy: ignored (the owner policy says repository_policies: ignore)\n`);
      continue;
    }
    io.out(`${kind} policy:\n`);
    for (const rule of policy.rules) {
      const why = ruleFails(rule, claims, kind === "owner" ? name : undefined);
      io.out(`  rule ${rule.name} (line ${rule.line}): ${why === undefined ? "holds" : why}\n`);
    }
  }
  if (!decision.ok) {
    io.out(`refused: 403 policy_denied: ${decision.detail}\n`);
    return 1;
  }
  if (Object.keys(policies).length === 0) io.out("no policy: the default token (TOKEN_PERMISSIONS ∩ installation)\n");
  const rule = [decision.rule && `rule ${decision.rule}`, decision.ownerRule && `owner rule ${decision.ownerRule}`].filter(Boolean).join(" and ");
  if (rule) io.out(`applies: ${rule}\n`);
  // The /token grant without a request and before the installation (server/token/permissions-to-mint.ts).
  const grant = grantPermissions({ ceilings: [{ source: CEILING_TOKEN_PERMISSIONS, permissions: permissions.permissions }, ...decision.ceilings] });
  const listed = Object.entries(grant.ok ? grant.permissions : {}).map(([key, level]) => `${key}: ${level}`).join(", ");
  io.out(`grant: ${listed || "metadata: read (nothing else)"} (TOKEN_PERMISSIONS${decision.ceilings.map((c) => ` ∩ ${c.source}`).join("")}; the installation may narrow it further)\n`);
  return 0;
}

/**
 * `--consent NAME`: the broker's consent decision (server/policy/decide-consent.ts) for repository
 * NAME, whose policy this is, named in the `repositories` of a job of the claims' repository. Unlike
 * the broker's answer to that job, this names the reason: it runs where the policy is readable.
 */
function explainConsent(policies: Partial<Record<PolicyKind, CompiledPolicy>>, claims: Record<string, unknown>, caller: string, target: string, io: CommandIo): number {
  const read = readRepositoryName(target, caller.split("/")[0]!);
  if (!read.ok) {
    io.err(`tokensmith policy: --consent: ${read.problem}\n`);
    return 2;
  }
  const fullName = `${caller.split("/")[0]}/${read.name}`;
  if (policies.repository && !policies.owner?.ignoreRepositoryPolicies) {
    io.out(`repository policy of ${fullName}:\n`);
    for (const rule of policies.repository.rules) {
      const why = consents(rule) ? ruleFails(rule, claims) : "has no repository condition (only such rules consent)";
      io.out(`  rule ${rule.name} (line ${rule.line}): ${why === undefined ? "consents" : why}\n`);
    }
  }
  const decision = decideConsent({ repository: policies.repository ?? null, owner: policies.owner ?? null, claims, targetName: read.name });
  if (!decision.ok) {
    io.out(`refused: 403 policy_denied: ${consentDenied(fullName, caller)} (here: ${decision.why})\n`);
    return 1;
  }
  const rule = [decision.rule && `rule ${decision.rule}`, decision.ownerRule && `owner rule ${decision.ownerRule}`].filter(Boolean).join(" and ");
  const lent = Object.entries(decision.permissions).map(([key, level]) => `${key}: ${level}`).join(", ");
  io.out(`consents: ${rule}\nlends: ${lent || "nothing but metadata: read"} (the token for ${caller} and ${fullName} gets no more than this ∩ its own grant)\n`);
  return 0;
}

/** A JSON object of claims, or a JWT whose payload is read (not verified: explain decides nothing). */
function readClaims(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = /^[\w-]+\.[\w-]+\.[\w-]*$/.test(text) ? JSON.parse(Buffer.from(text.split(".")[1]!, "base64url").toString("utf8")) : JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
