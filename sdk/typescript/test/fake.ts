// A tiny local HTTP server whose answers each test scripts, to inject the
// faults a real API rarely shows on demand: 503s, 429s, hangs, cut streams.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the fake received. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

/** Answers the n-th request (from 0). */
export type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

/** A running fake: its URL, what it saw, and a promise per closed connection. */
export interface Fake {
  url: string;
  seen: Seen[];
  /** Resolves when the client has closed a request's connection before the answer ended. */
  clientGone: Promise<void>;
  close(): Promise<void>;
}

export async function fake(handler: Handler): Promise<Fake> {
  const seen: Seen[] = [];
  let gone!: () => void;
  const clientGone = new Promise<void>((r) => (gone = r));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const n = seen.length;
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
      res.on("close", () => {
        if (!res.writableFinished) gone();
      });
      handler(req, res, n);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    clientGone,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Writes a problem+json answer. */
export function problem(res: ServerResponse, status: number, type: string, detail: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": "application/problem+json", "X-Request-Id": "req-1", ...headers });
  res.end(JSON.stringify({ type: `https://sessionbox.dev/problems/${type}`, title: type, status, detail, instance: "/x", requestId: "req-1" }));
}

/** Writes a JSON answer. */
export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}
