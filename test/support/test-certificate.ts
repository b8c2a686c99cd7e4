// A self-signed certificate for one DNS name, made by the system's openssl (Node's crypto signs but
// does not write X.509): a TLS server on loopback that a child process trusts through
// NODE_EXTRA_CA_CERTS, so a test can reach it by that name, or meet a name mismatch at another one.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCertificate {
  key: string;
  cert: string;
  /** The certificate's file: the value for NODE_EXTRA_CA_CERTS. */
  certFile: string;
}

export function selfSignedCertificate(dnsName: string): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-cert-"));
  const keyFile = join(dir, "key.pem");
  const certFile = join(dir, "cert.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", `/CN=${dnsName}`, "-addext", `subjectAltName=DNS:${dnsName}`,
  ], { stdio: "ignore" });
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), certFile };
}
