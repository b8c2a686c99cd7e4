// A raw HTTP/1.1 request (node:http): any method, any header, any body bytes — what fetch refuses.
import { request, type Agent } from "node:http";

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A body is always framed with Content-Length (unless the caller frames it itself). node:http's
 * client frames a body of its own accord only for methods other than GET, HEAD, DELETE, OPTIONS,
 * TRACE and CONNECT: for a DELETE or OPTIONS it writes the body bytes after the headers with
 * neither Content-Length nor chunked encoding, on a keep-alive connection. The server then reads
 * them, rightly, as the start of the next request (a 400 or, for a valid prefix such as "GET",
 * a request that waits for the rest), and whatever request the agent sends next on that socket
 * gets the answer to those bytes: a HEAD then fails with "Data after `Connection: close`".
 */
export function rawRequest(url: string, options: { method: string; path: string; headers?: Record<string, string>; body?: Buffer | string; agent?: Agent }): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const headers: Record<string, string> = { ...options.headers };
  const framed = Object.keys(headers).some((name) => ["content-length", "transfer-encoding"].includes(name.toLowerCase()));
  if (options.body !== undefined && !framed) headers["content-length"] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method: options.method, path: options.path, headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}
