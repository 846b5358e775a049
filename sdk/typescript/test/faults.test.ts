// Retries, errors and aborts, with faults injected by a local fake server.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Sessionbox, SessionboxError, parseRetryAfter, type RetryEvent } from "@sessionbox/sdk";
import { fake, json, problem, type Fake } from "./fake.js";

const session = { sessionId: "s", state: "running", pauseOnIdle: false };
const fakes: Fake[] = [];
after(() => Promise.all(fakes.map((f) => f.close())));

async function serve(handler: Parameters<typeof fake>[0]): Promise<{ f: Fake; sb: Sessionbox; retries: RetryEvent[] }> {
  const f = await fake(handler);
  fakes.push(f);
  const retries: RetryEvent[] = [];
  const sb = new Sessionbox({ baseUrl: f.url, apiKey: "sbx_fake", retry: { baseDelayMs: 1, onRetry: (e) => retries.push(e) } });
  return { f, sb, retries };
}

describe("retries", () => {
  it("retries a GET on 503 after Retry-After, then succeeds", async () => {
    const { f, sb, retries } = await serve((_, res, n) => {
      if (n < 2) problem(res, 503, "unavailable", "busy", { "Retry-After": "0" });
      else json(res, 200, session);
    });
    assert.deepEqual(await sb.status("s"), session);
    assert.equal(f.seen.length, 3);
    assert.deepEqual(retries.map((r) => [r.attempt, r.status, r.retryAfter, r.delayMs, r.method]), [
      [1, 503, 0, 0, "GET"],
      [2, 503, 0, 0, "GET"],
    ]);
    assert.equal(f.seen[0]!.headers.authorization, "Bearer sbx_fake");
  });

  it("waits what Retry-After says, in seconds or as a date", async () => {
    const past = new Date(Date.now() - 60_000).toUTCString();
    const { sb, retries } = await serve((_, res, n) => {
      if (n === 0) problem(res, 429, "limit-reached", "cap", { "Retry-After": "1" });
      else if (n === 1) problem(res, 429, "limit-reached", "cap", { "Retry-After": past });
      else json(res, 200, { entries: [] });
    });
    await sb.listFiles("s");
    assert.equal(retries[0]?.delayMs, 1000);
    assert.equal(retries[1]?.delayMs, 0, "a date already past");
  });

  it("retries PUT and DELETE (idempotent) on 503", async () => {
    const { f, sb } = await serve((req, res, n) => {
      if (n % 2 === 0) problem(res, 503, "unavailable", "busy", { "Retry-After": "0" });
      else if (req.method === "PUT") json(res, 200, { name: "a", path: "/home/user/a", type: "file", size: 3, modifiedAt: "2026-01-01T00:00:00Z" });
      else res.writeHead(204).end();
    });
    await sb.writeFile("s", "a", new Uint8Array([1, 2, 3]));
    await sb.deleteFile("s", "a");
    assert.deepEqual(f.seen.map((s) => s.method), ["PUT", "PUT", "DELETE", "DELETE"]);
    assert.deepEqual([...f.seen[1]!.body], [1, 2, 3], "the retried PUT sends the whole body again");
  });

  it("never retries execute or other POSTs; the error carries Retry-After", async () => {
    const { f, sb, retries } = await serve((_, res) => problem(res, 503, "unavailable", "try later", { "Retry-After": "7" }));
    const err = await sb.execute("s", { code: "1" }).catch((e: unknown) => e);
    assert.ok(err instanceof SessionboxError);
    assert.equal(err.status, 503);
    assert.equal(err.retryAfter, 7);
    await assert.rejects(sb.executeStream("s", { code: "1" }).next(), SessionboxError);
    await assert.rejects(sb.stop("s"), SessionboxError);
    await assert.rejects(sb.submitRun("s", { code: "1" }), SessionboxError);
    assert.equal(f.seen.length, 4, "one request each");
    assert.deepEqual(retries, []);
  });

  it("retries a run submitted with an Idempotency-Key", async () => {
    const { f, sb } = await serve((_, res, n) => {
      if (n === 0) problem(res, 503, "unavailable", "busy", { "Retry-After": "0" });
      else json(res, 202, { runId: "r1", status: "queued" });
    });
    assert.deepEqual(await sb.submitRun("s", { code: "1" }, { idempotencyKey: "k-1" }), { runId: "r1", status: "queued" });
    assert.deepEqual(f.seen.map((s) => s.headers["idempotency-key"]), ["k-1", "k-1"]);
  });

  it("gives up after maxRetries with the last answer", async () => {
    const { f, sb } = await serve((_, res) => problem(res, 503, "unavailable", "down", { "Retry-After": "0" }));
    await assert.rejects(sb.status("s"), (e: unknown) => e instanceof SessionboxError && e.status === 503 && e.detail === "down");
    assert.equal(f.seen.length, 4, "the first attempt and 3 retries");
  });

  it("fails at once when Retry-After asks for longer than maxDelayMs", async () => {
    const f = await fake((_, res) => problem(res, 429, "limit-reached", "cap", { "Retry-After": "3600" }));
    fakes.push(f);
    const sb = new Sessionbox({ baseUrl: f.url, retry: { maxDelayMs: 5000 } });
    await assert.rejects(sb.status("s"), (e: unknown) => e instanceof SessionboxError && e.retryAfter === 3600);
    assert.equal(f.seen.length, 1);
  });

  it("does not retry other statuses", async () => {
    const { f, sb } = await serve((_, res) => problem(res, 500, "internal", "boom"));
    await assert.rejects(sb.status("s"), (e: unknown) => e instanceof SessionboxError && e.status === 500);
    assert.equal(f.seen.length, 1);
  });
});

describe("errors", () => {
  it("reads an answer that is not problem+json", async () => {
    const { sb } = await serve((_, res) => {
      res.writeHead(502, "Bad Gateway", { "Content-Type": "text/html", "X-Request-Id": "gw-9" });
      res.end("<html><body>upstream died</body></html>");
    });
    const err = await sb.listSessions().catch((e: unknown) => e);
    assert.ok(err instanceof SessionboxError);
    assert.equal(err.status, 502);
    assert.equal(err.type, "about:blank");
    assert.equal(err.title, "Bad Gateway");
    assert.match(err.detail, /upstream died/);
    assert.equal(err.requestId, "gw-9");
  });

  it("throws the problem a long execute sends after its 200", async () => {
    const { sb } = await serve((_, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write("   ");
      res.end(JSON.stringify({ type: "https://sessionbox.dev/problems/unavailable", title: "Unavailable", status: 502, detail: "the sandbox went away" }));
    });
    await assert.rejects(sb.execute("s", { code: "1" }), (e: unknown) => e instanceof SessionboxError && e.status === 502 && /went away/.test(e.detail));
  });

  it("throws the failure line of a stream that failed midway, after the lines before it", async () => {
    const { sb } = await serve((_, res) => {
      res.writeHead(200, { "Content-Type": "application/x-ndjson" });
      res.write('{"type":"start"}\n{"type":"stdout","text":"a\\n"}\n');
      res.end(JSON.stringify({ type: "failure", problem: { type: "https://sessionbox.dev/problems/timeout", title: "Timeout", status: 504, detail: "gone" } }) + "\n");
    });
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const l of sb.executeStream("s", { code: "1" })) got.push(l.type);
      })(),
      (e: unknown) => e instanceof SessionboxError && e.status === 504 && e.type.endsWith("/timeout"),
    );
    assert.deepEqual(got, ["start", "stdout"]);
  });

  it("throws when a stream ends before its done line", async () => {
    const { sb } = await serve((_, res) => {
      res.writeHead(200, { "Content-Type": "application/x-ndjson", "X-Request-Id": "cut-1" });
      res.end('{"type":"start"}\n{"type":"stdout","text":"a\\n"}\n');
    });
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const l of sb.executeStream("s", { code: "1" })) got.push(l.type);
      })(),
      (e: unknown) => e instanceof SessionboxError && e.title === "Incomplete stream" && e.requestId === "cut-1",
    );
    assert.deepEqual(got, ["start", "stdout"]);
  });

  it("parses Retry-After as seconds or an HTTP date", () => {
    assert.equal(parseRetryAfter("120"), 120);
    assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", Date.parse("Wed, 21 Oct 2015 07:27:30 GMT")), 30);
    assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", Date.parse("Wed, 21 Oct 2015 08:00:00 GMT")), 0);
    assert.equal(parseRetryAfter("soon"), undefined);
    assert.equal(parseRetryAfter(null), undefined);
  });
});

describe("unreachable", () => {
  it("sends again, an execute too, a request whose connection was refused", async () => {
    let calls = 0;
    const refused = () => new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    const retries: RetryEvent[] = [];
    const sb = new Sessionbox({
      baseUrl: "http://api.test",
      retry: { baseDelayMs: 1, onRetry: (e) => retries.push(e) },
      fetch: async () => {
        if (++calls < 3) throw refused();
        return new Response(JSON.stringify({ success: true, stdout: "", stderr: "", results: [] }), { headers: { "Content-Type": "application/json" } });
      },
    });
    assert.equal((await sb.execute("s", { code: "1" })).success, true);
    assert.deepEqual(retries.map((r) => [r.attempt, r.status, r.method]), [[1, 0, "POST"], [2, 0, "POST"]]);
    const reset = new Sessionbox({
      baseUrl: "http://api.test",
      retry: { baseDelayMs: 1 },
      fetch: async () => {
        calls++;
        throw new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) });
      },
    });
    calls = 0;
    await assert.rejects(reset.execute("s", { code: "1" }), /no answer from http:\/\/api.test/);
    assert.equal(calls, 1, "a connection cut after the request went out is not sent again");
  });

  it("names the server it could not reach, and why", async () => {
    const f = await fake(() => {});
    await f.close();
    const sb = new Sessionbox({ baseUrl: f.url });
    await assert.rejects(sb.status("s"), (e: Error) => e instanceof TypeError && e.message.includes(`no answer from ${f.url}`) &&
      /ECONNREFUSED/.test(e.message) && e.cause instanceof Error);
  });
});

describe("abort", () => {
  it("aborts a call the server never answers, and closes its connection", async () => {
    const { f, sb } = await serve(() => {});
    const ac = new AbortController();
    const call = sb.status("s", { signal: ac.signal });
    while (f.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    await assert.rejects(call, (e: Error) => e.name === "AbortError");
    await f.clientGone;
  });

  it("aborts the wait between retries", async () => {
    const { f, sb } = await serve((_, res) => problem(res, 503, "unavailable", "busy", { "Retry-After": "20" }));
    const ac = new AbortController();
    const call = sb.status("s", { signal: ac.signal });
    while (f.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    await assert.rejects(call, (e: Error) => e.name === "AbortError");
    assert.equal(f.seen.length, 1, "no retry after the abort");
  });

  it("aborts a stream between lines, and closes its connection", async () => {
    const { f, sb } = await serve((_, res) => {
      res.writeHead(200, { "Content-Type": "application/x-ndjson" });
      res.write('{"type":"start"}\n');
    });
    const ac = new AbortController();
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const l of sb.executeStream("s", { code: "1" }, { signal: ac.signal })) {
          got.push(l.type);
          ac.abort();
        }
      })(),
      (e: Error) => e.name === "AbortError",
    );
    assert.deepEqual(got, ["start"]);
    await f.clientGone;
  });

  it("refuses to start a call whose signal is already aborted", async () => {
    const { f, sb } = await serve((_, res) => json(res, 200, session));
    await assert.rejects(sb.status("s", { signal: AbortSignal.abort() }), (e: Error) => e.name === "AbortError");
    assert.equal(f.seen.length, 0);
  });
});

describe("files past a deployment's inline limit", () => {
  const entry = { name: "f", path: "/home/user/f", type: "file", size: 5, modifiedAt: "2026-01-01T00:00:00Z" };

  it("uploadFile tries inline, and on 413 takes the presigned way; the key never goes to storage", async () => {
    let storage: { auth: string | undefined; body: string } | undefined;
    const { f, sb } = await serve((req, res, n) => {
      if (req.url?.startsWith("/store")) {
        storage = { auth: req.headers.authorization, body: f.seen[n]!.body.toString() };
        res.writeHead(200).end();
      } else if (req.method === "PUT") problem(res, 413, "too-large", "past this deployment's 1 MB");
      else if (req.url?.endsWith("/upload-url")) {
        json(res, 200, { uploadUrl: `${f.url}/store`, method: "PUT", headers: {}, expiresAt: "2026-01-01T00:00:00Z", transferId: "t1" });
      } else json(res, 200, entry);
    });
    assert.deepEqual(await sb.uploadFile("s", "f", new TextEncoder().encode("hello")), entry);
    assert.deepEqual(f.seen.map((s) => `${s.method} ${s.url.split("?")[0]}`), [
      "PUT /v1/sessions/s/files/content",
      "POST /v1/sessions/s/files/upload-url",
      "PUT /store",
      "POST /v1/sessions/s/files/import",
    ]);
    assert.deepEqual(storage, { auth: undefined, body: "hello" });
  });

  it("downloadFile reads inline, and on 413 through the presigned URL", async () => {
    const { f, sb } = await serve((req, res) => {
      if (req.url === "/blob") res.writeHead(200).end("big bytes");
      else if (req.url?.endsWith("/download-url")) json(res, 200, { downloadUrl: `${f.url}/blob`, expiresAt: "2026-01-01T00:00:00Z", sizeBytes: 9 });
      else problem(res, 413, "too-large", "past the inline limit");
    });
    assert.equal(await sb.downloadFile("s", "f", { format: "text" }), "big bytes");
    assert.equal(f.seen.length, 3);
    assert.equal(f.seen[2]!.headers.authorization, undefined, "no key to storage");
    await assert.rejects(sb.readFile("s", "f"), (e: unknown) => e instanceof SessionboxError && e.status === 413);
  });
});
