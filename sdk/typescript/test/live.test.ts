// The SDK against a real API: SESSIONBOX_URL/SESSIONBOX_API_KEY, or a serve the
// tests start (see harness.ts).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Sessionbox, SessionboxError, SessionHandle, type CommandOutputLine, type ExecError, type ExecuteOutputLine, type Result, type UploadProgress } from "@sessionbox/sdk";
import { chromiumPath, runPage } from "./browser.js";
import { sessionId, startApi, type Api } from "./harness.js";
import { compile, freshProject } from "./pack.js";

let api: Api;
let sb: Sessionbox;
const sid = sessionId("live");

before(async () => {
  api = await startApi();
  sb = new Sessionbox({ baseUrl: api.baseUrl, apiKey: api.apiKey });
});

after(async () => {
  await sb?.deleteSession(sid).catch(() => {});
  await api?.close();
});

describe("execute", () => {
  it("returns the last expression's value and keeps state between calls", async () => {
    const first = await sb.execute(sid, { code: "x = 21\nprint('hi')\nx * 2" });
    assert.equal(first.success, true);
    assert.equal(first.stdout, "hi\n");
    assert.equal(first.results.find((r) => r.isMainResult)?.text, "42");
    const second = await sb.execute(sid, { code: "x + 1" });
    assert.equal(second.results[0]?.text, "22");
  });

  it("reports an exception as a result, not a thrown error", async () => {
    const res = await sb.execute(sid, { code: "raise ValueError('nope')" });
    assert.equal(res.success, false);
    assert.equal(res.error?.name, "ValueError");
    assert.equal(res.error?.value, "nope");
    assert.match(res.error?.traceback ?? "", /ValueError: nope/);
  });
});

describe("executeStream", () => {
  it("yields start, output in order, the exception as a typed error line, then done", async () => {
    const code = "import sys, time\nfor i in range(5):\n    print(i, flush=True)\n    time.sleep(0.05)\n" +
      "sys.stderr.write('warn\\n')\n1/0";
    const lines: ExecuteOutputLine[] = [];
    for await (const line of sb.executeStream(sid, { code })) lines.push(line);
    const kinds = lines.map((l) => l.type).filter((t) => t !== "keepalive");
    assert.equal(kinds[0], "start");
    assert.equal(kinds.at(-1), "done");
    let stdout = "";
    for (const l of lines) if (l.type === "stdout") stdout += l.text;
    assert.equal(stdout, "0\n1\n2\n3\n4\n");
    const err = lines.find((l) => l.type === "error");
    assert.ok(err && "error" in err, "an error line carrying the exception");
    assert.equal(err.error.name, "ZeroDivisionError");
    assert.ok(lines.indexOf(err) > lines.findLastIndex((l) => l.type === "stdout"), "the error comes after the output");
    const done = lines.at(-1);
    assert.ok(done?.type === "done");
    assert.equal(done.summary.success, false);
    assert.ok(!("stdout" in done.summary), "the done line does not repeat the output");
  });

  it("yields rich results as result lines", async () => {
    const results = [];
    for await (const line of sb.executeStream(sid, { code: "6 * 7" })) if (line.type === "result") results.push(line.result);
    assert.equal(results.length, 1);
    assert.equal(results[0]?.text, "42");
  });

  it("stops reading when the loop breaks, and the session goes on", async () => {
    for await (const line of sb.executeStream(sid, { code: "for i in range(3):\n    print(i, flush=True)" })) {
      if (line.type === "stdout") break;
    }
    const res = await sb.execute(sid, { code: "len('still here')" });
    assert.equal(res.results[0]?.text, "10");
  });

  it("can be aborted while the code runs", async (t) => {
    const own = sessionId("abort");
    t.after(() => sb.deleteSession(own).catch(() => {}));
    const ac = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const line of sb.executeStream(own, { code: "import time\nprint('a', flush=True)\ntime.sleep(30)" }, { signal: ac.signal })) {
          seen.push(line.type);
          if (line.type === "stdout") ac.abort();
        }
      })(),
      (err: Error) => err.name === "AbortError",
    );
    assert.deepEqual(seen.filter((t) => t !== "keepalive"), ["start", "stdout"]);
  });
});

describe("errors", () => {
  it("throws SessionboxError from problem+json on bad input", async () => {
    const err = await sb.execute(sid, { code: "" }).then(
      () => assert.fail("an empty code was accepted"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SessionboxError);
    assert.equal(err.status, 400);
    assert.equal(err.type, "https://sessionbox.dev/problems/invalid-input");
    assert.match(err.detail, /code/);
    assert.ok(err.requestId, "the request id to quote");
  });

  it("throws 400 naming a package spec install refuses", async () => {
    await assert.rejects(sb.install(sid, { packages: ["pandas; rm -rf /"] }), (e: unknown) =>
      e instanceof SessionboxError && e.status === 400 && e.detail.includes("rm -rf"));
  });

  it("throws 404 not-found for an unknown session, naming it", async () => {
    const other = sessionId("unknown");
    await assert.rejects(sb.status(other), (e: unknown) =>
      e instanceof SessionboxError && e.status === 404 && e.type.endsWith("/not-found") && e.detail.includes(other));
  });

  it("throws from executeStream when the call fails before its stream", async () => {
    await assert.rejects(
      (async () => {
        for await (const _ of sb.executeStream(sid, { code: "1", timeoutSecs: 100000 })) assert.fail("a line of a refused call");
      })(),
      (e: unknown) => e instanceof SessionboxError && e.status === 400 && /timeoutSecs/.test(e.detail),
    );
  });
});

describe("files", () => {
  const bytes = new Uint8Array(256 * 3);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;

  it("round-trips binary bytes, lists and deletes", async () => {
    const entry = await sb.writeFile(sid, "bin/all-bytes.bin", bytes);
    assert.equal(entry.size, bytes.length);
    assert.equal(entry.path, "/home/user/bin/all-bytes.bin");
    assert.deepEqual(await sb.readFile(sid, "bin/all-bytes.bin"), bytes);
    const seen = await sb.execute(sid, { code: "open('bin/all-bytes.bin','rb').read() == bytes(range(256)) * 3" });
    assert.equal(seen.results[0]?.text, "True", "the sandbox holds the same bytes");
    const list = await sb.listFiles(sid, { path: "bin" });
    assert.deepEqual(list.entries.map((e) => [e.name, e.type, e.size]), [["all-bytes.bin", "file", bytes.length]]);
    await sb.deleteFile(sid, "bin/all-bytes.bin");
    assert.deepEqual((await sb.listFiles(sid, { path: "bin" })).entries, []);
    await assert.rejects(sb.readFile(sid, "bin/all-bytes.bin"), (e: unknown) => e instanceof SessionboxError && e.status === 404);
  });

  it("writes and reads text, whatever the file's content type", async () => {
    await sb.writeFile(sid, "t/a.csv", "a,b\n1,2\n");
    assert.equal(await sb.readTextFile(sid, "t/a.csv"), "a,b\n1,2\n");
  });

  it("uploadFile sends bytes through a presigned upload with progress", async () => {
    const big = new Uint8Array(1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) % 251;
    const progress: UploadProgress[] = [];
    const entry = await sb.uploadFile(sid, "up/big.bin", big, { onProgress: (p) => progress.push(p) });
    assert.equal(entry.size, big.length);
    assert.deepEqual(progress[0], { loaded: 0, total: big.length });
    assert.deepEqual(progress.at(-1), { loaded: big.length, total: big.length });
    assert.ok(progress.length > 3, `progress in steps, got ${progress.length}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.loaded >= progress[i - 1]!.loaded, "progress never goes back");
    assert.deepEqual(await sb.readFile(sid, "up/big.bin"), big);
  });

  it("uploadFile takes a Node stream with its size, and a Blob", async () => {
    const parts = [Buffer.from("hello, "), Buffer.from("w\u00f6rld")];
    const size = parts.reduce((n, b) => n + b.length, 0);
    const progress: number[] = [];
    await sb.uploadFile(sid, "up/stream.txt", Readable.from(parts), { size, onProgress: (p) => progress.push(p.loaded) });
    assert.equal(await sb.readTextFile(sid, "up/stream.txt"), "hello, w\u00f6rld");
    assert.equal(progress.at(-1), size);
    await sb.uploadFile(sid, "up/blob.json", new Blob(['{"a":1}'], { type: "application/json" }));
    assert.equal(await sb.readTextFile(sid, "up/blob.json"), '{"a":1}');
  });

  it("uploadFile aborted midway leaves no file", async () => {
    const ac = new AbortController();
    const big = new Uint8Array(2 * 1024 * 1024);
    let at = 0;
    await assert.rejects(
      sb.uploadFile(sid, "up/aborted.bin", big, {
        signal: ac.signal,
        onProgress: (p) => {
          if (p.loaded > 0 && at === 0) {
            at = p.loaded;
            ac.abort();
          }
        },
      }),
      (e: Error) => e.name === "AbortError",
    );
    assert.ok(at > 0 && at < big.length, `aborted after ${at} of ${big.length} bytes`);
    await assert.rejects(sb.readFile(sid, "up/aborted.bin"), (e: unknown) => e instanceof SessionboxError && e.status === 404);
  });

  it("uploadFile refuses a stream that is not the size it announced", async () => {
    await assert.rejects(sb.uploadFile(sid, "up/short.bin", Readable.from([Buffer.from("abc")]), { size: 10 }), /held 3 bytes, not the 10/);
    await assert.rejects(sb.uploadFile(sid, "up/none.bin", Readable.from([Buffer.from("abc")])), /needs options.size/);
  });

  it("downloadUrl gives a URL that serves the file without credentials", async () => {
    await sb.writeFile(sid, "dl/x.bin", bytes);
    const ticket = await sb.downloadUrl(sid, "dl/x.bin");
    assert.equal(ticket.sizeBytes, bytes.length);
    const res = await fetch(ticket.downloadUrl);
    assert.equal(res.status, 200);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
  });
});

describe("sessions and runs", () => {
  it("status, sessions, reset, stop", async () => {
    await sb.execute(sid, { code: "kept = 1" });
    const st = await sb.status(sid);
    assert.equal(st.sessionId, sid);
    assert.equal(st.state, "running");
    const ids = [];
    for await (const s of sb.sessions({ limit: 1 })) ids.push(s.sessionId);
    assert.ok(ids.includes(sid), `${sid} listed among ${ids.join(", ")}`);
    await sb.reset(sid);
    const after = await sb.execute(sid, { code: "'kept' in globals()" });
    assert.equal(after.results[0]?.text, "False", "reset cleared the kernel");
    const m = await sb.metrics(sid).catch((e: unknown) => {
      // A sandbox seconds old may have no sample yet: 502 with Retry-After, as documented.
      assert.ok(e instanceof SessionboxError && e.status === 502, String(e));
      return undefined;
    });
    if (m) {
      assert.ok(m.memTotalBytes > 0, JSON.stringify(m));
      assert.ok(m.samples.length > 0);
    }
    const stopped = await sb.stop(sid);
    assert.equal(stopped.state, "stopped");
  });

  it("submitRun and waitForRun", async () => {
    const own = sessionId("run");
    const accepted = await sb.submitRun(own, { code: "sum(range(10))" }, { idempotencyKey: own });
    const again = await sb.submitRun(own, { code: "sum(range(10))" }, { idempotencyKey: own });
    assert.equal(again.runId, accepted.runId, "the same key, the same run");
    const run = await sb.waitForRun(accepted.runId, { intervalMs: 100 });
    assert.equal(run.status, "succeeded");
    assert.equal(run.result?.results[0]?.text, "45");
    await sb.deleteSession(own);
  });

  it("executeOnce runs without a session, whole or streamed", async () => {
    const res = await sb.executeOnce({ code: "6 * 7" });
    assert.equal(res.results[0]?.text, "42");
    const kinds: string[] = [];
    for await (const l of sb.executeOnceStream({ code: "print('x')\n2" })) kinds.push(l.type);
    assert.deepEqual(kinds.filter((k) => k !== "keepalive"), ["start", "stdout", "result", "done"]);
  });

  it("installStream throws the refusal of a bad spec before any line", async () => {
    const lines: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const l of sb.installStream(sid, { packages: ["--index-url=http://evil"] })) lines.push(l.type);
      })(),
      (e: unknown) => e instanceof SessionboxError && e.status === 400 && e.type === "https://sessionbox.dev/problems/invalid-input",
    );
    assert.deepEqual(lines, []);
  });
});

describe("commands", () => {
  it("runCommand returns the exit and output; a non-zero exit is a result", async () => {
    const res = await sb.runCommand(sid, { cmd: "echo hi; echo oops >&2; exit 3" });
    assert.deepEqual([res.exitCode, res.stdout, res.stderr, res.timedOut], [3, "hi\n", "oops\n", false]);
  });

  it("runCommandStream yields output in order, then done with the result", async () => {
    const lines: CommandOutputLine[] = [];
    for await (const l of sb.runCommandStream(sid, { cmd: "for i in 1 2 3; do echo $i; sleep 0.05; done" })) lines.push(l);
    const kinds = lines.map((l) => l.type).filter((t) => t !== "keepalive");
    assert.equal(kinds[0], "start");
    let out = "";
    for (const l of lines) if (l.type === "stdout") out += l.text;
    assert.equal(out, "1\n2\n3\n");
    const done = lines.at(-1);
    assert.ok(done?.type === "done");
    assert.equal(done.summary.exitCode, 0);
  });

  it("startCommand, listCommands, attachCommand and killCommand", async () => {
    const bg = await sb.startCommand(sid, { cmd: "echo a; sleep 1; echo b" });
    assert.ok(bg.pid > 0);
    let out = "";
    let last: CommandOutputLine | undefined;
    for await (const l of sb.attachCommand(sid, bg.commandId)) {
      if (l.type === "stdout") out += l.text;
      last = l;
    }
    // "b" comes a second after the attach; whether "a", printed before it, is
    // replayed is the server's matter, so only the live part is held here.
    assert.ok(out.endsWith("b\n") && "a\nb\n".endsWith(out), JSON.stringify(out));
    assert.ok(last?.type === "done" && last.summary.exitCode === 0);

    const long = await sb.startCommand(sid, { cmd: "sleep 60" });
    assert.ok((await sb.listCommands(sid)).commands.some((c) => c.commandId === long.commandId && c.running));
    await sb.killCommand(sid, long.commandId);
    const info = await sb.getCommand(sid, long.commandId).catch((e: unknown) => e);
    // Killed: ended with a signal's exit, or already forgotten by the sandbox (404 saying so).
    if (info instanceof SessionboxError) assert.equal(info.status, 404);
    else assert.ok(info && typeof info === "object" && "running" in info);
  });

  it("readCommandOutput reads a background command until it ends: every line once, then its exit code", async () => {
    const s = sb.session(sid);
    const bg = await s.commands.start("for i in $(seq 1 20); do echo line$i; sleep 0.05; done; echo warn >&2; exit 4");
    let stdout = "";
    let stderr = "";
    let reads = 0;
    for (;;) {
      const out = await s.commands.readOutput(bg.commandId, { waitSecs: 1 });
      reads++;
      assert.equal(out.commandId, bg.commandId);
      stdout += out.stdout;
      stderr += out.stderr;
      if (!out.running && !out.more) {
        assert.equal(out.exitCode, 4);
        assert.equal(out.stdoutBytes, Buffer.byteLength(stdout));
        assert.match(out.stdoutPath, new RegExp(bg.commandId));
        break;
      }
      assert.ok(reads < 60, "the command never ended");
    }
    assert.equal(stdout, Array.from({ length: 20 }, (_, i) => `line${i + 1}\n`).join(""));
    assert.equal(stderr, "warn\n");
    // Read once more: nothing new, still the exit code.
    const again = await sb.readCommandOutput(sid, bg.commandId);
    assert.deepEqual([again.stdout, again.stderr, again.running, again.exitCode], ["", "", false, 4]);
  });
});

describe("contexts", () => {
  it("keep their own variables, reset and delete", async () => {
    await sb.execute(sid, { code: "where = 'default'" });
    const ctx = await sb.createContext(sid, { cwd: "/tmp" });
    assert.equal(ctx.language, "python");
    const inCtx = await sb.execute(sid, { code: "import os\nwhere = 'ctx'\nos.getcwd() == '/tmp'", context: ctx.contextId });
    assert.equal(inCtx.results[0]?.text, "True");
    assert.equal((await sb.execute(sid, { code: "where == 'default'" })).results[0]?.text, "True");
    assert.ok((await sb.listContexts(sid)).contexts.some((c) => c.contextId === ctx.contextId));
    await sb.resetContext(sid, ctx.contextId);
    const afterReset = await sb.execute(sid, { code: "'where' in globals()", context: ctx.contextId });
    assert.equal(afterReset.results[0]?.text, "False");
    await sb.deleteContext(sid, ctx.contextId);
    await assert.rejects(sb.execute(sid, { code: "1", context: ctx.contextId }), (e: unknown) => e instanceof SessionboxError && e.status === 404);
  });
});

describe("session handle", () => {
  it("execute with callbacks: output, results and the exception as they happen, then the whole result with text", async (t) => {
    const s = await SessionHandle.create({ client: sb, sessionId: sessionId("handle") });
    t.after(() => s.delete().catch(() => {}));
    const seen: string[] = [];
    const results: Result[] = [];
    const errors: ExecError[] = [];
    const code = "import sys\nprint('a', flush=True)\nsys.stderr.write('b\\n')\ndisplay(6 * 7)\nv = 1\nv + 1";
    const run = await s.execute(code, {
      onStdout: (x) => void seen.push(`out:${x}`),
      onStderr: (x) => void seen.push(`err:${x}`),
      onResult: (r) => void results.push(r),
      onError: (e) => void errors.push(e),
    });
    assert.deepEqual(seen, ["out:a\n", "err:b\n"]);
    assert.deepEqual(results.map((r) => [r.text, r.isMainResult]), [["42", false], ["2", true]]);
    assert.equal(errors.length, 0);
    assert.equal(run.text, "2");
    assert.equal(run.stdout, "a\n");
    assert.equal(run.stderr, "b\n");
    assert.equal(JSON.parse(JSON.stringify(run)).text, undefined, "text is an accessor, not part of the JSON");
    const failed = await s.execute("raise KeyError('k')", { onError: (e) => void errors.push(e) });
    assert.equal(errors[0]?.name, "KeyError");
    assert.equal(failed.success, false);
    assert.equal(failed.error?.name, "KeyError");
    assert.equal(failed.text, undefined);
    assert.equal((await s.execute("v * 10")).text, "10", "the same kernel, without callbacks");
  });

  it("files of any size: downloadFile past the inline limit through the presigned URL, as bytes, text, blob and stream", async (t) => {
    const s = sb.session(sessionId("files"));
    t.after(() => s.delete().catch(() => {}));
    const big = new Uint8Array(5 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + 3) % 256;
    await s.files.write("big.bin", big);
    await assert.rejects(s.client.readFile(s.sessionId, "big.bin"), (e: unknown) => e instanceof SessionboxError && e.status === 413);
    assert.deepEqual(await s.files.read("big.bin"), big);
    const blob = await s.files.read("big.bin", { format: "blob" });
    assert.equal(blob.size, big.length);
    let n = 0;
    for await (const c of (await s.files.readStream("big.bin")) as unknown as AsyncIterable<Uint8Array>) n += c.byteLength;
    assert.equal(n, big.length);
    await s.files.write("note.txt", "h\u00e9llo");
    assert.equal(await s.files.readText("note.txt"), "h\u00e9llo");
    assert.deepEqual((await s.files.list()).entries.map((e) => e.name).filter((n) => !n.startsWith(".")).sort(), ["big.bin", "note.txt"]);
    await s.files.remove("note.txt");
    await assert.rejects(s.files.readText("note.txt"), (e: unknown) => e instanceof SessionboxError && e.status === 404);
  });

  it("commands stream to callbacks and contexts keep their own variables", async (t) => {
    const s = sb.session(sessionId("cmds"));
    t.after(() => s.delete().catch(() => {}));
    const out: string[] = [];
    const res = await s.commands.run("echo one; echo two >&2; exit 4", { onStdout: (x) => void out.push(x), onStderr: (x) => void out.push(`!${x}`) });
    assert.deepEqual([res.exitCode, res.stdout, res.stderr], [4, "one\n", "two\n"]);
    assert.deepEqual(out.sort(), ["!two\n", "one\n"]);
    const ctx = await s.contexts.create();
    await s.execute({ code: "w = 'ctx'", context: ctx.contextId });
    assert.equal((await s.execute("'w' in globals()")).text, "False");
  });

  it("reads SESSIONBOX_URL and SESSIONBOX_API_KEY when no options are given", async () => {
    const saved = { url: process.env.SESSIONBOX_URL, key: process.env.SESSIONBOX_API_KEY };
    process.env.SESSIONBOX_URL = api.baseUrl;
    process.env.SESSIONBOX_API_KEY = api.apiKey;
    try {
      const own = new Sessionbox();
      const res = await own.executeOnce({ code: "1 + 1" });
      assert.equal(res.text, "2");
      delete process.env.SESSIONBOX_API_KEY;
      await assert.rejects(new Sessionbox().executeOnce({ code: "1" }), (e: unknown) => e instanceof SessionboxError && e.status === 401);
      delete process.env.SESSIONBOX_URL;
      assert.throws(() => new Sessionbox(), /SESSIONBOX_URL/);
    } finally {
      for (const [k, v] of [["SESSIONBOX_URL", saved.url], ["SESSIONBOX_API_KEY", saved.key]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe("packed", () => {
  it("installs from its tarball offline, type-checks a program, which runs session, callbacks, chart, 20 MiB up and down, command", { timeout: 300_000 }, async () => {
    const app = await freshProject();
    await compile(app);
    const { stdout } = await promisify(execFile)(process.execPath, ["out/program.js"], {
      cwd: app,
      env: { ...process.env, SESSIONBOX_URL: api.baseUrl, SESSIONBOX_API_KEY: api.apiKey },
    });
    const r = JSON.parse(stdout) as { text: string; stdout: string; png: number; bytes: number; sha256: string };
    assert.equal(r.text, "42");
    assert.equal(r.stdout, "drawing\n");
    assert.ok(r.png > 1000, `a PNG of ${r.png} base64 characters`);
    assert.equal(r.bytes, 20 * 1024 * 1024);
    assert.match(r.sha256, /^[0-9a-f]{64}$/);
  });
});

describe("examples", () => {
  it("quickstart.mjs runs to the end", async () => {
    const example = fileURLToPath(new URL("../../examples/quickstart.mjs", import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [example, sessionId("example")], {
      env: { ...process.env, SESSIONBOX_URL: api.baseUrl, SESSIONBOX_API_KEY: api.apiKey },
    });
    assert.match(stdout, /step 0\nstep 1\nstep 2\n/);
    assert.match(stdout, /result: 45/);
    assert.match(stdout, /mean temperature: 10.5/);
    assert.match(stdout, /refused: 400 https:\/\/sessionbox.dev\/problems\/invalid-input/);
  });
});

describe("in a browser", () => {
  it("streams, uploads a Blob and a stream with progress, and types errors in headless Chromium", async (t) => {
    const chromium = chromiumPath();
    if (!chromium) {
      // scripts/setup.sh installs it; CI must not pass without it.
      assert.ok(!process.env.CI, "no chromium on PATH and no CHROMIUM_PATH");
      t.skip("no chromium on PATH (scripts/setup.sh installs it) and no CHROMIUM_PATH");
      return;
    }
    const own = sessionId("browser");
    t.after(() => sb.deleteSession(own).catch(() => {}));
    const r = await runPage(chromium, { api: api.baseUrl, key: api.apiKey, session: own });
    assert.equal(r.failure, undefined);
    assert.deepEqual(r.lines, ["start", "stdout:0\n", "stdout:1\n", "stdout:2\n", "error:ZeroDivisionError", "done"]);
    const total = 3 * 1024 * 1024 + 5;
    assert.deepEqual(r.upload, { size: total, first: { loaded: 0, total }, last: { loaded: total, total }, monotonic: true, same: true });
    assert.equal(r.streamText, "from a stream");
    assert.deepEqual(r.badInput, { typed: true, status: 400, type: "https://sessionbox.dev/problems/invalid-input" });
    assert.equal(r.abort, "AbortError");
    assert.equal(r.uploadAbort, "AbortError");
  });
});
