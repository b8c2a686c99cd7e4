// deploy/kubernetes/ (issue 29, item 5): every manifest validates against the Kubernetes schema
// (kubernetes-models: the API's OpenAPI definitions), and says what an operator relies on — two
// replicas, readiness on /readyz and liveness on /healthz on the admin port, the admin port kept
// out of the Service, non-root with a read-only root filesystem, the App key and secrets from a
// Secret, every setting one the broker reads, the ports the image EXPOSEs. No cluster involved.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { parseAllDocuments } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { SETTING_NAMES } from "../server/settings.js";

const DIR = new URL("../deploy/kubernetes/", import.meta.url);
type Doc = { apiVersion: string; kind: string; metadata: { name: string }; [key: string]: unknown };

/** The schema's model for each kind the manifests use; validate() throws on any schema error. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "apps/v1 Deployment": Deployment,
  "v1 Service": Service,
  "v1 ConfigMap": ConfigMap,
  "v1 Secret": Secret,
  "policy/v1 PodDisruptionBudget": PodDisruptionBudget,
};

function validate(doc: Doc): void {
  const Model = MODELS[`${doc.apiVersion} ${doc.kind}`];
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc as never).validate();
}

const files = readdirSync(DIR).filter((name) => name.endsWith(".yaml") && name !== "kustomization.yaml");
const docs = new Map<string, Doc>();
for (const file of files) {
  const parsed = parseAllDocuments(readFileSync(new URL(file, DIR), "utf8"));
  for (const one of Array.isArray(parsed) ? parsed : [parsed]) {
    if (one.errors.length > 0) throw new Error(`${file}: ${one.errors[0]!.message}`);
    const doc = one.toJS() as Doc;
    docs.set(`${doc.kind}/${file}`, doc);
  }
}
const byKind = (kind: string): Doc => {
  const found = [...docs.entries()].filter(([key]) => key.startsWith(`${kind}/`));
  expect(found).toHaveLength(1);
  return found[0]![1];
};

type Container = { name: string; ports: Array<{ name: string; containerPort: number }>; env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>; envFrom?: Array<{ configMapRef?: { name: string } }>; readinessProbe: { httpGet: { path: string; port: string } }; livenessProbe: { httpGet: { path: string; port: string } }; resources: { requests: Record<string, string> }; securityContext: Record<string, unknown> };
const deployment = () => byKind("Deployment") as Doc & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { securityContext: Record<string, unknown>; containers: Container[]; terminationGracePeriodSeconds: number } } } };
const broker = () => deployment().spec.template.spec.containers[0]!;

describe("deploy/kubernetes", () => {
  it("every manifest validates against the Kubernetes schema", () => {
    expect(files.sort()).toEqual(["configmap.yaml", "deployment.yaml", "pdb.yaml", "secret.example.yaml", "service.yaml"]);
    for (const [key, doc] of docs) expect(() => validate(doc)).not.toThrow(), void key;
  });

  it("the schema check is not vacuous: replicas as a string, a string containerPort, a nameless container, no selector: each refused", () => {
    const base = deployment();
    const broken = [
      { ...base, spec: { ...base.spec, replicas: "two" } },
      { ...base, spec: { ...base.spec, template: { ...base.spec.template, spec: { ...base.spec.template.spec, containers: [{ ...broker(), ports: [{ name: "http", containerPort: "8080" }] }] } } } },
      { ...base, spec: { ...base.spec, template: { ...base.spec.template, spec: { ...base.spec.template.spec, containers: [{ ...broker(), name: undefined }] } } } },
      { ...base, spec: { ...base.spec, selector: undefined } },
    ];
    for (const doc of broken) expect(() => validate(JSON.parse(JSON.stringify(doc)) as Doc)).toThrow();
  });

  it("kustomization.yaml applies every manifest but the example Secret", () => {
    const kustomization = parseAllDocuments(readFileSync(new URL("kustomization.yaml", DIR), "utf8"));
    const resources = ((Array.isArray(kustomization) ? kustomization[0]! : kustomization).toJS() as { resources: string[] }).resources;
    expect([...resources].sort()).toEqual(files.filter((file) => file !== "secret.example.yaml").sort());
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

  it("the image agrees: the ports the Containerfile EXPOSEs, its numeric non-root USER", () => {
    const containerfile = readFileSync(new URL("../Containerfile", import.meta.url), "utf8");
    expect(containerfile).toMatch(/^EXPOSE 8080 9090$/m);
    expect(containerfile).toMatch(/^USER 10001:10001$/m);
    expect(containerfile).toMatch(/ADMIN_PORT=9090/);
  });

  it("the App key and every secret come from the Secret, never a literal; every variable is one the broker reads", () => {
    const container = broker();
    const fromSecret = Object.fromEntries(container.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom!.secretKeyRef!.key]));
    expect(fromSecret).toMatchObject({ HOST_APP_PRIVATE_KEY: "HOST_APP_PRIVATE_KEY", HOST_WEBHOOK_SECRET: "HOST_WEBHOOK_SECRET", PROCESS_TRIGGER_SECRET: "PROCESS_TRIGGER_SECRET" });
    for (const name of ["SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "WEBHOOK_QUEUE"]) expect(fromSecret[name]).toBe("REDIS_URL");
    const secret = byKind("Secret") as Doc & { stringData: Record<string, string> };
    for (const key of Object.values(fromSecret)) expect(Object.keys(secret.stringData)).toContain(key);
    expect(container.envFrom).toEqual([{ configMapRef: { name: "tokensmith" } }]);
    const config = byKind("ConfigMap") as Doc & { data: Record<string, string> };
    const known = new Set<string>([...SETTING_NAMES, "PORT", "HOST", "ADMIN_PORT", "ADMIN_HOST", "LOG_LEVEL", "MAX_CONNECTIONS"]);
    for (const name of [...container.env.map((e) => e.name), ...Object.keys(config.data)]) expect(known).toContain(name);
    for (const secretName of ["HOST_APP_PRIVATE_KEY", "HOST_WEBHOOK_SECRET", "PROCESS_TRIGGER_SECRET"]) expect(Object.keys(config.data)).not.toContain(secretName);
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
});

describe("Redis persistence (issue 40): the queue and the claims survive a Redis restart", () => {
  it("deploy/kubernetes/redis: a StatefulSet with an append-only file on a persistent volume, and its Service, both schema-valid", async () => {
    const { StatefulSet } = await import("kubernetes-models/apps/v1/StatefulSet");
    const redisDocs = parseAllDocuments(readFileSync(new URL("redis/redis.yaml", DIR), "utf8")).map((one) => one.toJS() as Doc & { spec: unknown });
    const set = redisDocs.find((doc) => doc.kind === "StatefulSet")!;
    const service = redisDocs.find((doc) => doc.kind === "Service")!;
    expect(() => new StatefulSet(set as never).validate()).not.toThrow();
    expect(() => validate(service)).not.toThrow();
    const container = (set.spec as { template: { spec: { containers: Array<{ args: string[]; volumeMounts: Array<{ name: string; mountPath: string }> }> } } }).template.spec.containers[0]!;
    expect(container.args.join(" ")).toContain("--appendonly yes");
    expect(container.args.join(" ")).toContain("--dir /data");
    expect(container.volumeMounts).toContainEqual({ name: "data", mountPath: "/data" });
    expect((set.spec as { volumeClaimTemplates: Array<{ metadata: { name: string } }> }).volumeClaimTemplates.map((claim) => claim.metadata.name)).toEqual(["data"]);
    // The Secret's example URL names this Service.
    expect(readFileSync(new URL("secret.example.yaml", DIR), "utf8")).toContain(`redis://${service.metadata.name}:6379`);
  });

  it("deploy/compose.yaml: Redis with appendonly yes in /data on a named volume", () => {
    const compose = parseAllDocuments(readFileSync(new URL("../compose.yaml", DIR), "utf8"))[0]!.toJS() as { services: { redis: { command: string[]; volumes: string[] } }; volumes: Record<string, unknown> };
    const command = compose.services.redis.command.join(" ");
    expect(command).toContain("--appendonly yes");
    expect(command).toContain("--dir /data");
    expect(compose.services.redis.volumes).toEqual(["redis-data:/data"]);
    expect(Object.keys(compose.volumes)).toEqual(["redis-data"]);
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

  it("the patched Deployment validates; no App key or PIN in its environment, the PIN a read-only file from the Secret", () => {
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
    const secret = parseAllDocuments(readFileSync(new URL("pin.secret.example.yaml", OVERLAY), "utf8"))[0]!.toJS() as Doc;
    expect(() => validate(secret)).not.toThrow();
    expect(secret.metadata?.name).toBe("tokensmith-key-store");
  });
});

