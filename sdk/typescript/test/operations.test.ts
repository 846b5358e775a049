// Every operation of pkg/api/openapi.json has a method of Sessionbox, so a new
// route cannot land without its SDK call (or a reason here why it has none).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { it } from "node:test";
import { Sessionbox, SessionboxError } from "@sessionbox/sdk";
import { fake, json, problem } from "./fake.js";

/** operationId -> the methods that call it. */
const methods: Record<string, (keyof Sessionbox)[]> = {
  listSessions: ["listSessions", "sessions"],
  startSandbox: ["start"],
  stopSandbox: ["stop"],
  sandboxStatus: ["status"],
  sandboxMetrics: ["metrics"],
  execute: ["execute"],
  executeStream: ["executeStream"],
  executeOnce: ["executeOnce"],
  executeOnceStream: ["executeOnceStream"],
  reset: ["reset"],
  install: ["install"],
  installStream: ["installStream"],
  checkpoint: ["checkpoint"],
  deleteSession: ["deleteSession"],
  listFiles: ["listFiles"],
  readFile: ["readFile", "readTextFile"],
  writeFile: ["writeFile"],
  deleteFile: ["deleteFile"],
  uploadUrl: ["uploadFile"],
  importFile: ["uploadFile"],
  downloadUrl: ["downloadUrl"],
  uploadUrls: ["uploadUrls"],
  submitRun: ["submitRun"],
  getRun: ["getRun", "waitForRun"],
  runCommand: ["runCommand", "runCommandStream", "startCommand"],
  listCommands: ["listCommands"],
  getCommand: ["getCommand", "attachCommand"],
  readCommandOutput: ["readCommandOutput"],
  killCommand: ["killCommand"],
  createContext: ["createContext"],
  listContexts: ["listContexts"],
  resetContext: ["resetContext"],
  deleteContext: ["deleteContext"],
};

/** Operations the SDK leaves alone, and why. */
const without: Record<string, string> = {
  healthz: "liveness for load balancers, not for applications",
  openapi: "the document the SDK is generated from",
  mcp: "MCP clients speak it through the official MCP SDKs",
};

it("every operation of the document has a Sessionbox method", async () => {
  const doc = JSON.parse(await readFile(new URL("../../../../pkg/api/openapi.json", import.meta.url), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ops = Object.values(doc.paths).flatMap((p) =>
    Object.entries(p).filter(([m]) => ["get", "put", "post", "delete", "patch"].includes(m)).map(([, o]) => o.operationId ?? "?"));
  for (const op of ops) {
    assert.ok(op in methods || op in without, `operation ${op} has no Sessionbox method: add one and list it here`);
  }
  for (const [op, names] of Object.entries(methods)) {
    assert.ok(ops.includes(op), `${op} is listed here but not in the document`);
    for (const name of names) assert.equal(typeof Sessionbox.prototype[name], "function", `Sessionbox.${name} for ${op}`);
  }
});

it("readCommandOutput sends waitSecs, reads once (no retry) and decodes the read", async () => {
  const read = {
    commandId: "cmd-1", running: false, exitCode: 3, stdout: "a\n", stderr: "e\n", more: false,
    stdoutPath: "/tmp/sessionbox-commands/cmd-1/stdout", stderrPath: "/tmp/sessionbox-commands/cmd-1/stderr", stdoutBytes: 2, stderrBytes: 2,
  };
  const f = await fake((_req, res, n) => (n === 0 ? json(res, 200, read) : problem(res, 503, "unavailable", "busy", { "Retry-After": "0" })));
  try {
    const sb = new Sessionbox({ baseUrl: f.url, apiKey: "sbx_fake", retry: { baseDelayMs: 1 } });
    assert.deepEqual(await sb.session("s 1").commands.readOutput("cmd/1", { waitSecs: 5 }), read);
    assert.equal(f.seen[0]?.method, "GET");
    assert.equal(f.seen[0]?.url, "/v1/sessions/s%201/commands/cmd%2F1/output?waitSecs=5");
    assert.equal(f.seen[0]?.headers.authorization, "Bearer sbx_fake");

    // Without waitSecs no query; a 503 is not retried, since a read moves the read position.
    await assert.rejects(sb.readCommandOutput("s", "cmd-1"), (e: unknown) => e instanceof SessionboxError && e.status === 503);
    assert.equal(f.seen.length, 2);
    assert.equal(f.seen[1]?.url, "/v1/sessions/s/commands/cmd-1/output");
  } finally {
    await f.close();
  }
});
