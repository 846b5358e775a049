// A session end to end, written as a frontend would against the types
// openapi-typescript generates from pkg/api/openapi.json with its default
// options, through openapi-fetch: no casts, no hand-written types. `make
// test` (scripts/contract/check.sh) generates build/openapi.d.ts and
// type-checks this file; a document that generates awkward types (a
// response with two media types, a defaulted field made required, closed
// rich objects, two stream lines sharing a type) fails it. e2e's
// TestContractGeneratedClient runs it against a local stack.
import createClient from "openapi-fetch";
import type { components, paths } from "./build/openapi.js";

type ExecuteStreamLine = components["schemas"]["ExecuteStreamLine"];
type InstallStreamLine = components["schemas"]["InstallStreamLine"];
type Problem = components["schemas"]["Problem"];

/** The lines of an NDJSON body, parsed as T. */
async function* ndjson<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) {
        const parsed: T = JSON.parse(line);
        yield parsed;
      }
      nl = buf.indexOf("\n");
    }
  }
}

/** What a client shows for a problem: its type decides the wording. */
function explain(p: Problem): string {
  switch (p.type) {
    case "https://sessionbox.dev/problems/invalid-input":
      return `fix the request: ${p.detail}`;
    case "https://sessionbox.dev/problems/limit-reached":
      return `slow down: ${p.detail}`;
    case "https://sessionbox.dev/problems/not-found":
      return `no such thing: ${p.detail}`;
    default:
      return `${p.status} ${p.title}: ${p.detail}`;
  }
}

/** Runs a session end to end and returns what it saw, line by line. */
export async function session(baseUrl: string, apiKey: string, id: string): Promise<string[]> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
  const seen: string[] = [];
  const params = { path: { id } };

  // Start: the sandbox type may be left out (it has a documented default).
  const started = await api.POST("/v1/sessions/{id}/sandbox/start", { params, body: { metadata: { team: "data" } } });
  if (started.error) throw new Error(explain(started.error));
  seen.push(`started ${started.data.sessionId}: ${started.data.state}`);

  // Upload a CSV: the body is bytes. openapi-fetch JSON-encodes a body
  // by default, which would store the text with its quotes: the server
  // refuses that (415), and the documented form passes the bytes through.
  const csvText = "city,temp\nOslo,4\nLisbon,17\n";
  const naive = await api.PUT("/v1/sessions/{id}/files/content", {
    params: { path: { id }, query: { path: "data/naive.csv" } },
    body: csvText,
  });
  if (naive.error) seen.push(`naive write refused: ${naive.response.status} ${naive.error.type}`);
  const put = await api.PUT("/v1/sessions/{id}/files/content", {
    params: { path: { id }, query: { path: "data/temps.csv" } },
    body: csvText,
    bodySerializer: (bytes) => bytes,
    headers: { "Content-Type": "application/octet-stream" },
  });
  if (put.error) throw new Error(explain(put.error));
  seen.push(`wrote ${put.data.path} (${put.data.size} bytes)`);

  // Execute, JSON. A call that runs past 10 s and then fails is still a
  // 200, its body a Problem: a 200 body with a `type` is that (or, had we
  // asked for application/x-ndjson, a stream line); without one it is the
  // ExecutionResult.
  const run = await api.POST("/v1/sessions/{id}/execute", {
    params,
    body: { code: "import json, pandas as pd\ndf = pd.read_csv('data/temps.csv')\nfrom IPython.display import JSON\ndisplay(JSON({'mean': float(df.temp.mean())}))\nlen(df)" },
  });
  if (run.error) throw new Error(explain(run.error));
  if ("type" in run.data) throw new Error(`the call failed after its 200: ${JSON.stringify(run.data)}`);
  for (const r of run.data.results) {
    if (r.json) seen.push(`json ${Object.keys(r.json).join(",")}`);
    if (r.isMainResult) seen.push(`rows ${r.text}`);
  }
  if (run.data.error) seen.push(`raised ${run.data.error.name}`);

  // Execute, streamed: every line type has its own shape.
  const live = await api.POST("/v1/sessions/{id}/execute/stream", {
    params,
    body: { code: "print('working', flush=True)\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\n1/0" },
    parseAs: "stream",
  });
  if (live.error) throw new Error(explain(live.error));
  if (!live.data) throw new Error("a stream without a body");
  for await (const line of ndjson<ExecuteStreamLine>(live.data)) {
    switch (line.type) {
      case "start":
      case "keepalive":
        break;
      case "stdout":
      case "stderr":
        seen.push(`${line.type} ${line.text.trim()}`);
        break;
      case "result":
        seen.push(`result ${line.result.png ? "png" : line.result.text ?? "?"}`);
        break;
      case "error":
        seen.push(`exception ${line.error.name}`);
        break;
      case "done":
        seen.push(`done success=${line.summary.success} in ${line.summary.durationMs} ms`);
        break;
      case "failure":
        seen.push(`failed: ${explain(line.problem)}`);
        break;
    }
  }

  // Install, streamed.
  const pip = await api.POST("/v1/sessions/{id}/install/stream", { params, body: { packages: ["tinylib==1.0"] }, parseAs: "stream" });
  if (pip.error) {
    seen.push(`install refused: ${explain(pip.error)}`);
  } else if (pip.data) {
    for await (const line of ndjson<InstallStreamLine>(pip.data)) {
      if (line.type === "done") seen.push(`pip exit ${line.summary.exitCode}`);
      if (line.type === "failure") seen.push(`pip failed: ${line.problem.detail}`);
    }
  }

  // Read the file back as served (text/csv), not as JSON.
  const csv = await api.GET("/v1/sessions/{id}/files/content", {
    params: { path: { id }, query: { path: "data/temps.csv" } },
    parseAs: "text",
  });
  if (csv.error) throw new Error(explain(csv.error));
  seen.push(`read ${csv.data.split("\n")[0]}`);
  if (csv.data === csvText) seen.push("read back the exact bytes");

  // An asynchronous run.
  const queued = await api.POST("/v1/sessions/{id}/runs", { params, body: { code: "sum(range(10))" } });
  if (queued.error) throw new Error(explain(queued.error));
  for (;;) {
    const got = await api.GET("/v1/runs/{runId}", { params: { path: { runId: queued.data.runId } } });
    if (got.error) throw new Error(explain(got.error));
    if (got.data.status === "succeeded" || got.data.status === "failed") {
      seen.push(`run ${got.data.status}: ${got.data.result?.results[0]?.text ?? got.data.error ?? ""}`);
      break;
    }
    await new Promise((done) => setTimeout(done, 100));
  }

  // Bad input: a typed problem.
  const bad = await api.POST("/v1/sessions/{id}/execute", { params, body: { code: "1", timeoutSecs: 100000 } });
  if (bad.error) seen.push(explain(bad.error));

  const stopped = await api.DELETE("/v1/sessions/{id}", { params });
  if (stopped.error) throw new Error(explain(stopped.error));
  seen.push(`deleted: ${stopped.response.status}`);
  return seen;
}
