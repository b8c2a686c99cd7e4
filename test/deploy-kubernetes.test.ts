// deploy/kubernetes/ (issue 29, item 5; issue 40, item 3): rendered by kubectl's own kustomize
// (`kubectl kustomize`, what `kubectl apply -k` applies: test/support/kubectl.ts), and every object
// validated against the Kubernetes schema (kubernetes-models: the API's OpenAPI definitions); then
// what an operator relies on — two replicas, readiness on /readyz and liveness on /healthz on the
// admin port, the admin port kept out of the Service and reachable only from the monitoring
// namespace, egress only to DNS, HTTPS and Redis, a ServiceAccount with no token, non-root with a
// read-only root filesystem, the App key and secrets from a Secret, settings in a ConfigMap whose
// name changes with its contents (so an edit rolls the pods), the image pinned by digest when the
// kustomization says so, the points budget within GitHub's for the replicas. No cluster involved.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { parseAllDocuments } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { SETTING_NAMES } from "../server/settings.js";
import { kubectl, kustomize } from "./support/kubectl.js";

const DIR = new URL("../deploy/kubernetes/", import.meta.url);
const DIR_PATH = fileURLToPath(DIR);
type Doc = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown };

/** The schema's model for each kind the manifests use; validate() throws on any schema error. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "apps/v1 Deployment": Deployment,
  "apps/v1 StatefulSet": StatefulSet,
  "v1 Service": Service,
  "v1 ServiceAccount": ServiceAccount,
  "v1 ConfigMap": ConfigMap,
  "v1 Secret": Secret,
  "policy/v1 PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1 NetworkPolicy": NetworkPolicy,
};

function validate(doc: Doc): void {
  const Model = MODELS[`${doc.apiVersion} ${doc.kind}`];
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc as never).validate();
}

const parseDocs = (text: string, where: string): Doc[] =>
  parseAllDocuments(text).map((one) => {
    if (one.errors.length > 0) throw new Error(`${where}: ${one.errors[0]!.message}`);
    return one.toJS() as Doc;
  });

const scratch = mkdtempSync(join(tmpdir(), "tokensmith-kustomize-"));
let rendered: Doc[] = [];
let renderedRedis: Doc[] = [];
beforeAll(() => {
  kubectl(); // fetched once per machine (test/support/kubectl.ts)
  rendered = parseDocs(kustomize(DIR_PATH), "kubectl kustomize deploy/kubernetes");
  renderedRedis = parseDocs(kustomize(join(DIR_PATH, "redis")), "kubectl kustomize deploy/kubernetes/redis");
}, 300_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A copy of deploy/kubernetes with `edit` applied to one file, rendered. */
function renderEdited(file: string, edit: (text: string) => string): Doc[] {
  const copy = mkdtempSync(join(scratch, "copy-"));
  cpSync(DIR_PATH, copy, { recursive: true });
  writeFileSync(join(copy, file), edit(readFileSync(join(copy, file), "utf8")));
  return parseDocs(kustomize(copy), `kubectl kustomize (${file} edited)`);
}

const byKind = (kind: string, docs: Doc[] = rendered): Doc => {
  const found = docs.filter((doc) => doc.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};

type Container = { name: string; image: string; ports: Array<{ name: string; containerPort: number }>; env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>; envFrom?: Array<{ configMapRef?: { name: string } }>; readinessProbe: { httpGet: { path: string; port: string } }; livenessProbe: { httpGet: { path: string; port: string } }; resources: { requests: Record<string, string> }; securityContext: Record<string, unknown> };
type PodSpec = { serviceAccountName?: string; automountServiceAccountToken?: boolean; securityContext: Record<string, unknown>; containers: Container[]; terminationGracePeriodSeconds: number };
type DeploymentDoc = Doc & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };
const deployment = (docs: Doc[] = rendered) => byKind("Deployment", docs) as DeploymentDoc;
const broker = (docs: Doc[] = rendered) => deployment(docs).spec.template.spec.containers[0]!;

type Peer = { namespaceSelector?: { matchLabels: Record<string, string> }; podSelector?: { matchLabels: Record<string, string> }; ipBlock?: { cidr: string; except?: string[] } };
type Rule = { from?: Peer[]; to?: Peer[]; ports?: Array<{ port: string | number; protocol: string }> };
type PolicyDoc = Doc & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Rule[]; egress: Rule[] } };

describe("deploy/kubernetes, as kubectl apply -k renders it", () => {
  it("renders the ServiceAccount, ConfigMap, Service, Deployment, PodDisruptionBudget and NetworkPolicy, each valid against the Kubernetes schema", () => {
    expect(rendered.map((doc) => doc.kind).sort()).toEqual(["ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"]);
    expect(renderedRedis.map((doc) => doc.kind).sort()).toEqual(["NetworkPolicy", "Service", "StatefulSet"]);
    for (const doc of [...rendered, ...renderedRedis]) expect(() => validate(doc)).not.toThrow();
    // The example Secret is not applied (the operator creates the real one) but is valid too.
    for (const doc of parseDocs(readFileSync(new URL("secret.example.yaml", DIR), "utf8"), "secret.example.yaml")) validate(doc);
  });

  it("the schema check is not vacuous: replicas as a string, a string containerPort, a nameless container, no selector, a NetworkPolicy port as an object: each refused", () => {
    const base = deployment();
    const broken: Doc[] = [
      { ...base, spec: { ...base.spec, replicas: "two" } } as never,
      { ...base, spec: { ...base.spec, template: { ...base.spec.template, spec: { ...base.spec.template.spec, containers: [{ ...broker(), ports: [{ name: "http", containerPort: "8080" }] }] } } } } as never,
      { ...base, spec: { ...base.spec, template: { ...base.spec.template, spec: { ...base.spec.template.spec, containers: [{ ...broker(), name: undefined }] } } } } as never,
      { ...base, spec: { ...base.spec, selector: undefined } } as never,
    ];
    const policy = byKind("NetworkPolicy") as PolicyDoc;
    broken.push({ ...policy, spec: { ...policy.spec, ingress: [{ ports: [{ port: { number: 8080 }, protocol: "TCP" }] }] } } as never);
    for (const doc of broken) expect(() => validate(JSON.parse(JSON.stringify(doc)) as Doc)).toThrow();
  });

  it("every file in the directory is applied, but the example Secret and the settings the ConfigMap is made from", () => {
    const kustomization = parseDocs(readFileSync(new URL("kustomization.yaml", DIR), "utf8"), "kustomization.yaml")[0] as Doc & { resources: string[] };
    const files = readdirSync(DIR).filter((name) => name.endsWith(".yaml") && name !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.filter((file) => file !== "secret.example.yaml").sort());
  });

  it("Deployment: two replicas, readiness /readyz and liveness /healthz on the admin port, non-root, read-only root, requests set", () => {
    const spec = deployment().spec;
    expect(spec.replicas).toBe(2);
    expect(spec.template.metadata.labels).toMatchObject(spec.selector.matchLabels);
    const container = broker();
    const ports = Object.fromEntries(container.ports.map((port) => [port.name, port.containerPort]));
    expect(ports).toEqual({ http: 8080, admin: 9090 });
    expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "admin" });
    expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "admin" });
    expect(spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
    expect(Object.keys(container.resources.requests).sort()).toEqual(["cpu", "memory"]);
    // The broker's own drain limit is 9 s (server/main.ts); the grace period covers it and the preStop pause.
    expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(9 + 5);
  });

  it("a ServiceAccount of its own with no token mounted, by the account and by the pod", () => {
    const account = byKind("ServiceAccount") as Doc & { automountServiceAccountToken: boolean };
    expect(account.automountServiceAccountToken).toBe(false);
    const pod = deployment().spec.template.spec;
    expect(pod.serviceAccountName).toBe(account.metadata.name);
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it("the image agrees: the ports the Containerfile EXPOSEs, its numeric non-root USER", () => {
    const containerfile = readFileSync(new URL("../Containerfile", import.meta.url), "utf8");
    expect(containerfile).toMatch(/^EXPOSE 8080 9090$/m);
    expect(containerfile).toMatch(/^USER 10001:10001$/m);
    expect(containerfile).toMatch(/ADMIN_PORT=9090/);
  });

  it("the image comes from kustomization.yaml's images:, and by digest once it names one (docs/deploying.md)", () => {
    expect(broker().image).toBe("ghcr.io/your-org/tokensmith:0.1.0");
    const digest = `sha256:${"0123456789abcdef".repeat(4)}`;
    const pinned = renderEdited("kustomization.yaml", (text) => text.replace(/^    newTag: .*$/m, `    digest: ${digest}`));
    expect(broker(pinned).image).toBe(`ghcr.io/your-org/tokensmith@${digest}`);
  });

  it("the App key and every secret come from the Secret, never a literal; every variable is one the broker reads", () => {
    const container = broker();
    const fromSecret = Object.fromEntries(container.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom!.secretKeyRef!.key]));
    expect(fromSecret).toMatchObject({ HOST_APP_PRIVATE_KEY: "HOST_APP_PRIVATE_KEY", HOST_WEBHOOK_SECRET: "HOST_WEBHOOK_SECRET", PROCESS_TRIGGER_SECRET: "PROCESS_TRIGGER_SECRET" });
    for (const name of ["SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "WEBHOOK_QUEUE"]) expect(fromSecret[name]).toBe("REDIS_URL");
    const secret = parseDocs(readFileSync(new URL("secret.example.yaml", DIR), "utf8"), "secret.example.yaml")[0] as Doc & { stringData: Record<string, string> };
    for (const key of Object.values(fromSecret)) expect(Object.keys(secret.stringData)).toContain(key);
    const config = byKind("ConfigMap") as Doc & { data: Record<string, string> };
    expect(container.envFrom).toEqual([{ configMapRef: { name: config.metadata.name } }]);
    const known = new Set<string>([...SETTING_NAMES, "PORT", "HOST", "ADMIN_PORT", "ADMIN_HOST", "LOG_LEVEL", "MAX_CONNECTIONS"]);
    for (const name of [...container.env.map((e) => e.name), ...Object.keys(config.data)]) expect(known).toContain(name);
    for (const secretName of ["HOST_APP_PRIVATE_KEY", "HOST_WEBHOOK_SECRET", "PROCESS_TRIGGER_SECRET"]) expect(Object.keys(config.data)).not.toContain(secretName);
  });

  it("an edit to settings.env renames the ConfigMap (a hash of its contents) and the Deployment follows it: the pods roll", () => {
    const before = byKind("ConfigMap");
    expect(before.metadata.name).toMatch(/^tokensmith-[a-z0-9]{10}$/);
    const edited = renderEdited("settings.env", (text) => text.replace(/^LOG_LEVEL=info$/m, "LOG_LEVEL=debug"));
    const after = byKind("ConfigMap", edited) as Doc & { data: Record<string, string> };
    expect(after.data.LOG_LEVEL).toBe("debug");
    expect(after.metadata.name).not.toBe(before.metadata.name);
    expect(broker(edited).envFrom).toEqual([{ configMapRef: { name: after.metadata.name } }]);
  });

  it("the points budget: UPSTREAM_POINTS_PER_MINUTE × replicas stays within GitHub's 900 a minute for the App", () => {
    const config = byKind("ConfigMap") as Doc & { data: Record<string, string> };
    expect(Number(config.data.UPSTREAM_POINTS_PER_MINUTE) * deployment().spec.replicas).toBeLessThanOrEqual(900);
  });

  it("Service: the broker's port only, never the admin port; it and the PodDisruptionBudget select the Deployment's pods", () => {
    const labels = deployment().spec.template.metadata.labels;
    const service = byKind("Service") as Doc & { spec: { selector: Record<string, string>; ports: Array<{ targetPort: string | number }> } };
    expect(service.spec.ports.map((port) => port.targetPort)).toEqual(["http"]);
    expect(labels).toMatchObject(service.spec.selector);
    const pdb = byKind("PodDisruptionBudget") as Doc & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } };
    expect(pdb.spec.minAvailable).toBe(1);
    expect(labels).toMatchObject(pdb.spec.selector.matchLabels);
  });

  it("NetworkPolicy: the broker's port from the ingress namespace only, the admin port from the monitoring namespace only", () => {
    const policy = byKind("NetworkPolicy") as PolicyDoc;
    expect(deployment().spec.template.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.policyTypes.sort()).toEqual(["Egress", "Ingress"]);
    // Every rule names both its peers and its ports: none opens a port to everyone or everything to a peer.
    for (const rule of policy.spec.ingress) expect([rule.from?.length, rule.ports?.length]).toEqual([1, 1]);
    const reach = Object.fromEntries(policy.spec.ingress.map((rule) => [rule.ports![0]!.port, rule.from![0]!.namespaceSelector?.matchLabels["kubernetes.io/metadata.name"]]));
    expect(reach).toEqual({ http: "ingress-nginx", admin: "monitoring" });
  });

  it("NetworkPolicy: egress to the cluster's DNS, HTTPS outside the private ranges and the metadata endpoint, and Redis; nothing else", () => {
    const policy = byKind("NetworkPolicy") as PolicyDoc;
    const rules = policy.spec.egress.map((rule) => ({ ports: rule.ports!.map((port) => `${port.port}/${port.protocol}`).sort(), to: rule.to! }));
    expect(rules.map((rule) => rule.ports)).toEqual([["53/TCP", "53/UDP"], ["443/TCP"], ["6379/TCP"]]);
    expect(rules[0]!.to).toEqual([{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } }, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }]);
    const https = rules[1]!.to[0]!.ipBlock!;
    expect(https.cidr).toBe("0.0.0.0/0");
    expect(https.except).toEqual(expect.arrayContaining(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]));
    const redis = byKind("StatefulSet", renderedRedis) as Doc & { spec: { template: { metadata: { labels: Record<string, string> } } } };
    expect(redis.spec.template.metadata.labels).toMatchObject(rules[2]!.to[0]!.podSelector!.matchLabels);
  });
});

describe("Redis (issue 40): persistence, a password, the brokers only", () => {
  type RedisContainer = { args: string[]; env: Array<{ name: string; valueFrom: { secretKeyRef: { name: string; key: string } } }>; readinessProbe: { exec: { command: string[] } }; volumeMounts: Array<{ name: string; mountPath: string }> };
  const statefulSet = () => byKind("StatefulSet", renderedRedis) as Doc & { spec: { volumeClaimTemplates: Array<{ metadata: { name: string } }>; template: { metadata: { labels: Record<string, string> }; spec: { containers: RedisContainer[] } } } };

  it("deploy/kubernetes/redis: a StatefulSet with an append-only file on a persistent volume, and its Service", () => {
    const container = statefulSet().spec.template.spec.containers[0]!;
    expect(container.args.join(" ")).toContain("--appendonly yes");
    expect(container.args.join(" ")).toContain("--dir /data");
    expect(container.volumeMounts).toContainEqual({ name: "data", mountPath: "/data" });
    expect(statefulSet().spec.volumeClaimTemplates.map((claim) => claim.metadata.name)).toEqual(["data"]);
    // The Secret's example URL names this Service, with a password.
    const service = byKind("Service", renderedRedis);
    expect(readFileSync(new URL("secret.example.yaml", DIR), "utf8")).toContain(`redis://:replace-me@${service.metadata.name}:6379`);
  });

  it("a password from the Secret tokensmith-redis: --requirepass from the env the kubelet expands, the probe's redis-cli authenticated", () => {
    const container = statefulSet().spec.template.spec.containers[0]!;
    const args = container.args;
    expect(args[args.indexOf("--requirepass") + 1]).toBe("$(REDIS_PASSWORD)");
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.valueFrom.secretKeyRef]));
    expect(env).toEqual({ REDIS_PASSWORD: { name: "tokensmith-redis", key: "password" }, REDISCLI_AUTH: { name: "tokensmith-redis", key: "password" } });
    expect(container.readinessProbe.exec.command).toEqual(["redis-cli", "ping"]);
  });

  it("its NetworkPolicy: in only from the brokers' pods on the Redis port, no egress at all", () => {
    const policy = byKind("NetworkPolicy", renderedRedis) as PolicyDoc;
    expect(statefulSet().spec.template.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.policyTypes.sort()).toEqual(["Egress", "Ingress"]);
    expect(policy.spec.egress).toEqual([]);
    expect(policy.spec.ingress).toHaveLength(1);
    expect(deployment().spec.template.metadata.labels).toMatchObject(policy.spec.ingress[0]!.from![0]!.podSelector!.matchLabels);
    expect(policy.spec.ingress[0]!.ports).toEqual([{ port: "redis", protocol: "TCP" }]);
  });

  type ComposeService = { command?: string[]; volumes?: string[]; restart?: string; environment?: Record<string, string> };
  const compose = () => parseAllDocuments(readFileSync(new URL("../compose.yaml", DIR), "utf8"))[0]!.toJS() as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };

  it("deploy/compose.yaml: Redis with appendonly yes in /data on a named volume", () => {
    const { services, volumes } = compose();
    const command = services.redis!.command!.join(" ");
    expect(command).toContain("--appendonly yes");
    expect(command).toContain("--dir /data");
    expect(services.redis!.volumes).toEqual(["redis-data:/data"]);
    expect(Object.keys(volumes)).toEqual(["redis-data"]);
  });

  it("deploy/compose.yaml: every service restarts unless stopped; Redis requires the password every broker's URLs carry", () => {
    const { services } = compose();
    expect(Object.keys(services).sort()).toEqual(["broker-a", "broker-b", "redis"]);
    for (const service of Object.values(services)) expect(service.restart).toBe("unless-stopped");
    const command = services.redis!.command!;
    expect(command[command.indexOf("--requirepass") + 1]).toMatch(/^\$\{TOKENSMITH_REDIS_PASSWORD:\?/);
    for (const name of ["broker-a", "broker-b"]) {
      for (const binding of ["SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "WEBHOOK_QUEUE"]) {
        expect(services[name]!.environment![binding]).toMatch(/^redis:\/\/:\$\{TOKENSMITH_REDIS_PASSWORD\}@127\.0\.0\.1:/);
      }
    }
  });
});

// The key-store overlay (docs/deploying.md#keep-the-app-key-in-a-key-store): its patch merged into
// the Deployment by hand (as kustomize's strategic merge does for these lists: by name, `$patch:
// delete` removing an entry) validates, and the PIN reaches the broker as a file from a Secret.
describe("deploy/kubernetes/key-store", () => {
  const OVERLAY = new URL("key-store/", DIR);
  type Named = { name: string; [key: string]: unknown };
  const mergeByName = (base: Named[] = [], patch: Named[] = []) => {
    const out = base.filter((entry) => !patch.some((p) => p.name === entry.name && p.$patch === "delete"));
    for (const entry of patch.filter((p) => p.$patch !== "delete")) {
      const at = out.findIndex((e) => e.name === entry.name);
      if (at >= 0) out[at] = { ...out[at], ...entry };
      else out.push(entry);
    }
    return out;
  };

  it("the patched Deployment validates; no App key or PIN in its environment, the PIN a read-only file from the Secret; the module's libraries on LD_LIBRARY_PATH", () => {
    const patch = parseAllDocuments(readFileSync(new URL("deployment-patch.yaml", OVERLAY), "utf8"))[0]!.toJS() as { spec: { template: { spec: { initContainers: Named[]; containers: Array<{ name: string; env: Named[]; volumeMounts: Named[] }>; volumes: Named[] } } } };
    const merged = structuredClone(deployment());
    const pod = merged.spec.template.spec as unknown as { initContainers?: Named[]; containers: Array<{ name: string; env: Named[]; volumeMounts?: Named[] }>; volumes?: Named[] };
    const patchPod = patch.spec.template.spec;
    pod.initContainers = mergeByName(pod.initContainers, patchPod.initContainers);
    pod.volumes = mergeByName(pod.volumes, patchPod.volumes);
    const container = pod.containers[0]!;
    container.env = mergeByName(container.env, patchPod.containers[0]!.env);
    container.volumeMounts = mergeByName(container.volumeMounts, patchPod.containers[0]!.volumeMounts);
    expect(() => validate(merged)).not.toThrow();

    const env = new Map(container.env.map((e) => [e.name, e]));
    expect(env.has("HOST_APP_PRIVATE_KEY")).toBe(false);
    expect(env.has("HOST_APP_KEY_PIN")).toBe(false);
    expect(String(env.get("HOST_APP_KEY_URI")?.value)).not.toMatch(/pin-value|pin-source/);
    const pinFile = String(env.get("HOST_APP_KEY_PIN_FILE")?.value);
    const mount = container.volumeMounts!.find((m) => pinFile.startsWith(`${String(m.mountPath)}/`));
    expect(mount).toMatchObject({ readOnly: true });
    const volume = pod.volumes!.find((v) => v.name === mount!.name) as { secret?: { secretName: string; defaultMode: number } };
    expect(volume.secret).toMatchObject({ secretName: "tokensmith-key-store", defaultMode: 0o400 });
    // The module and the libraries it needs that the image lacks (docs/deploying.md#keep-the-app-key-in-a-key-store):
    // copied whole by the init container into the volume the broker mounts read-only, found through LD_LIBRARY_PATH.
    const moduleMount = container.volumeMounts!.find((m) => m.name === "pkcs11-module") as unknown as { mountPath: string; readOnly?: boolean };
    expect(moduleMount.readOnly).toBe(true);
    expect(String(env.get("HOST_APP_KEY_URI")?.value)).toContain(`module-path=${moduleMount.mountPath}/`);
    expect(String(env.get("LD_LIBRARY_PATH")?.value)).toBe(`${moduleMount.mountPath}/lib`);
    const init = pod.initContainers!.find((c) => c.name === "pkcs11-module") as unknown as { command: string[]; volumeMounts: Array<{ name: string; mountPath: string }> };
    expect(init.volumeMounts).toContainEqual(expect.objectContaining({ name: "pkcs11-module", mountPath: moduleMount.mountPath }));
    expect(init.command).toEqual(["cp", "-rL", "/module/.", `${moduleMount.mountPath}/`]);
    const secret = parseAllDocuments(readFileSync(new URL("pin.secret.example.yaml", OVERLAY), "utf8"))[0]!.toJS() as Doc;
    expect(() => validate(secret)).not.toThrow();
    expect(secret.metadata?.name).toBe("tokensmith-key-store");
  });
});

