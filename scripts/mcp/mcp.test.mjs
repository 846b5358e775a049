// sessionbox's MCP server through the official MCP TypeScript SDK, over
// stdio (`sessionbox mcp`) and streamable HTTP (/v1/mcp), and through
// LangChain's MCP adapters. e2e's TestMCPJSClients runs this against a
// local stack; by hand:
//   SESSIONBOX_URL=http://127.0.0.1:8080 SESSIONBOX_API_KEY=sbx_... \
//   SESSIONBOX_BIN=bin/sessionbox SESSIONBOX_TEST_WHEEL=path/to/x-1.0-py3-none-any.whl \
//   node --test scripts/mcp/mcp.test.mjs
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { randomUUID } from "node:crypto";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const url = need("SESSIONBOX_URL");
const key = need("SESSIONBOX_API_KEY");
const bin = need("SESSIONBOX_BIN");
const wheelPath = need("SESSIONBOX_TEST_WHEEL");

const transports = {
  stdio: (session) =>
    new StdioClientTransport({
      command: bin,
      args: ["mcp", "--session", session],
      env: { PATH: process.env.PATH ?? "", SESSIONBOX_URL: url, SESSIONBOX_API_KEY: key },
      stderr: "inherit",
    }),
  http: (session) =>
    new StreamableHTTPClientTransport(new URL(`${url}/v1/mcp?session=${session}`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
};

const toolNames = ["delete_file", "execute_python", "install_packages", "kill_command", "list_files", "read_command_output",
  "read_file", "reset_kernel", "run_command", "start_command", "upload_files_from_urls", "write_file"];

const text = (res) =>
  res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

test("sessionbox mcp refuses a bad key at start", async () => {
  const client = new Client({ name: "sessionbox-js-test", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp"],
    env: { PATH: process.env.PATH ?? "", SESSIONBOX_URL: url, SESSIONBOX_API_KEY: "sbx_not_a_key_0123456789" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  await assert.rejects(client.connect(transport));
  await client.close().catch(() => {});
  assert.match(stderr, /refused SESSIONBOX_API_KEY/);
});

for (const [name, transport] of Object.entries(transports)) {
  describe(`MCP over ${name}`, () => {
    const session = `js-${name}-${randomUUID().slice(0, 8)}`;
    const client = new Client({ name: "sessionbox-js-test", version: "1.0.0" });
    const call = (tool, args = {}) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 180_000 });

    before(async () => {
      await client.connect(transport(session));
    });
    after(async () => {
      await client.close();
    });

    test("lists the tools with schemas", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      assert.deepEqual(names, toolNames);
      const exec = tools.find((t) => t.name === "execute_python");
      assert.equal(exec.inputSchema.type, "object");
      assert.deepEqual(exec.inputSchema.required, ["code"]);
      assert.ok(exec.description.length > 50);
      assert.deepEqual([exec.inputSchema.properties.timeoutSecs.minimum, exec.inputSchema.properties.timeoutSecs.maximum], [1, 900]);
      assert.equal(exec.outputSchema.type, "object");
      const install = tools.find((t) => t.name === "install_packages");
      assert.equal(install.inputSchema.properties.packages.type, "array");
      assert.equal(install.inputSchema.properties.packages.minItems, 1);
      const write = tools.find((t) => t.name === "write_file");
      assert.deepEqual(write.inputSchema.properties.encoding.enum, ["utf-8", "base64"]);
      const read = tools.find((t) => t.name === "read_command_output");
      assert.deepEqual([read.inputSchema.properties.waitSecs.minimum, read.inputSchema.properties.waitSecs.maximum], [1, 60]);
      assert.deepEqual(read.inputSchema.required, ["commandId"]);
      assert.equal(read.outputSchema.type, "object");
    });

    test("a background command: started, read in parts, ended; another killed", async () => {
      // It prints its lines at once (the first too must reach a read), then
      // runs on quietly: the first read's wait ends in the quiet part, the
      // later ones wait for the end, so no wait ends with output in flight.
      let res = await call("start_command", { cmd: "for i in $(seq 1 20); do echo tick$i; done; sleep 2; exit 4" });
      assert.ok(!res.isError, text(res));
      const id = res.structuredContent.commandId;
      assert.match(id, /^cmd-/);
      let out = "";
      let running = true;
      for (let i = 0; i < 20 && running; i++) {
        res = await call("read_command_output", { commandId: id, waitSecs: i === 0 ? 1 : 30 });
        assert.ok(!res.isError, text(res));
        assert.ok(JSON.stringify(res).length < 24 * 1024 + 2048);
        out += text(res) + "\n";
        running = res.structuredContent.running;
      }
      assert.equal(res.structuredContent.exitCode, 4, out);
      const ticks = out.split("\n").filter((l) => /^tick\d+$/.test(l));
      assert.deepEqual(ticks, Array.from({ length: 20 }, (_, i) => `tick${i + 1}`), "every line once, in order");
      res = await call("start_command", { cmd: "sleep 300" });
      const sleeper = res.structuredContent.commandId;
      res = await call("kill_command", { commandId: sleeper });
      assert.ok(!res.isError, text(res));
      res = await call("read_command_output", { commandId: sleeper, waitSecs: 5 });
      assert.match(text(res), /has ended/);
      res = await call("kill_command", { commandId: "cmd-unknown" });
      assert.equal(res.isError, true);
    });

    test("every result stays under the cap; a cut one names the whole text", async () => {
      const cap = 24 * 1024;
      let res = await call("execute_python", { code: "print('y' * 300_000)" });
      assert.ok(!res.isError, text(res).slice(0, 300));
      assert.ok(JSON.stringify(res).length < cap + 2048, `result of ${JSON.stringify(res).length} bytes`);
      const saved = text(res).match(/the whole text is in (\S+)/);
      assert.ok(saved, text(res).slice(0, 300));
      res = await call("read_file", { path: saved[1], offset: 1000, length: 100 });
      assert.match(text(res), /read on with offset 1100/);
      await call("run_command", { cmd: "head -c 3000000 /dev/zero | tr '\\0' 'z' > big.txt" });
      res = await call("read_file", { path: "big.txt" });
      assert.ok(JSON.stringify(res).length < cap + 2048, `read_file result of ${JSON.stringify(res).length} bytes`);
      assert.match(text(res), /of 3000000; read on with offset/);
    });

    test("execute_python keeps state between calls", async () => {
      let res = await call("execute_python", { code: "x = 40\nprint('set')\nx + 1" });
      assert.ok(!res.isError, text(res));
      assert.match(text(res), /set/);
      assert.match(text(res), /41/);
      assert.equal(res.structuredContent.success, true);
      res = await call("execute_python", { code: "x + 2" });
      assert.ok(!res.isError, text(res));
      assert.match(text(res), /42/);
    });

    test("output arrives as progress while the code runs", async () => {
      const seen = [];
      const res = await client.callTool(
        { name: "execute_python", arguments: { code: "import time\nfor i in range(3):\n    print('tick', i, flush=True); time.sleep(0.3)" } },
        undefined,
        { timeout: 180_000, onprogress: (p) => seen.push(p.message ?? "") },
      );
      assert.ok(!res.isError, text(res));
      assert.match(text(res), /tick 2/);
      assert.ok(seen.some((m) => m.includes("tick 0")), `progress messages: ${JSON.stringify(seen)}`);
    });

    test("a matplotlib chart comes back as an image block", async () => {
      const res = await call("execute_python", { code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()" });
      assert.ok(!res.isError, text(res));
      const img = res.content.find((c) => c.type === "image");
      assert.ok(img, `no image block in ${JSON.stringify(res.content).slice(0, 300)}`);
      assert.equal(img.mimeType, "image/png");
      assert.equal(Buffer.from(img.data, "base64").subarray(0, 4).toString("latin1"), "\x89PNG");
      const i = res.content.indexOf(img);
      assert.match(res.content[i - 1].text, /^\[image 1: a png/, "an image has a caption before it");
    });

    test("an exception is isError with its traceback", async () => {
      const res = await call("execute_python", { code: "def f():\n    raise ValueError('bad value')\nf()" });
      assert.equal(res.isError, true);
      assert.match(text(res), /ValueError/);
      assert.match(text(res), /bad value/);
    });

    test("run_command answers exit code, output and cwd; a timeout is isError", async () => {
      let res = await call("run_command", { cmd: "mkdir -p js && cd js && pwd && echo warn >&2 && exit 3" });
      assert.ok(!res.isError, text(res));
      assert.match(text(res), /exit code 3/);
      assert.match(text(res), /\/home\/user\/js/);
      assert.match(text(res), /warn/);
      assert.equal(res.structuredContent.exitCode, 3);
      assert.equal(res.structuredContent.stderr, undefined, "the output is in the text only");
      res = await call("run_command", { cmd: "pwd", cwd: "js" });
      assert.match(text(res), /\[stdout\]\n\/home\/user\/js/);
      res = await call("run_command", { cmd: "echo before; sleep 30", timeoutSecs: 1 });
      assert.equal(res.isError, true);
      assert.match(text(res), /did not finish within its time limit/);
      assert.match(text(res), /before/);
      assert.equal(res.structuredContent.timedOut, true);
    });

    test("files round trip", async () => {
      let res = await call("write_file", { path: "data/in.txt", content: "line one\nline two\n" });
      assert.ok(!res.isError, text(res));
      const bytes = Buffer.from([0, 159, 146, 150, 255]);
      res = await call("write_file", { path: "data/raw.bin", content: bytes.toString("base64"), encoding: "base64" });
      assert.ok(!res.isError, text(res));
      res = await call("list_files", { path: "data" });
      assert.match(text(res), /\/home\/user\/data\/in\.txt/);
      assert.match(text(res), /\/home\/user\/data\/raw\.bin/);
      res = await call("read_file", { path: "/home/user/data/in.txt" });
      assert.equal(text(res), "line one\nline two\n");
      res = await call("read_file", { path: "data/raw.bin" });
      const blob = res.content.find((c) => c.type === "resource");
      assert.ok(blob, JSON.stringify(res.content));
      assert.deepEqual(Buffer.from(blob.resource.blob, "base64"), bytes);
      res = await call("execute_python", { code: "open('data/in.txt').read().count('line')" });
      assert.match(text(res), /2/);
    });

    test("install_packages from a local wheel index", async () => {
      const wheel = readFileSync(wheelPath);
      const file = basename(wheelPath);
      const pkg = file.split("-")[0];
      let res = await call("write_file", { path: `index/${pkg}/${file}`, content: wheel.toString("base64"), encoding: "base64" });
      assert.ok(!res.isError, text(res));
      res = await call("write_file", { path: `index/${pkg}/index.html`, content: `<a href="${file}">${file}</a>` });
      assert.ok(!res.isError, text(res));
      res = await call("execute_python", {
        code:
          "import subprocess, socket, sys, time\n" +
          "srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8765'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
          "for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8765), 0.2).close(); break\n    except OSError: time.sleep(0.05)\n'up'",
      });
      assert.match(text(res), /up/);
      res = await call("install_packages", { packages: [`${pkg}==1.0`], indexUrl: "http://127.0.0.1:8765/" });
      assert.ok(!res.isError, text(res));
      assert.match(text(res), new RegExp(`Installed ${pkg}==1.0`));
      await call("execute_python", { code: "srv.kill(); srv.wait()" });
      res = await call("reset_kernel");
      assert.ok(!res.isError, text(res));
      res = await call("execute_python", { code: `import ${pkg}; ${pkg}.VALUE` });
      assert.ok(!res.isError, text(res));
      assert.match(text(res), /from-the-wheel/);
    });
  });
}

test("LangChain's MCP adapters load the tools and invoke execute_python", async () => {
  const mcp = new MultiServerMCPClient({
    mcpServers: {
      sessionbox: {
        transport: "http",
        url: `${url}/v1/mcp?session=js-langchain-${randomUUID().slice(0, 8)}`,
        headers: { Authorization: `Bearer ${key}` },
        automaticSSEFallback: false,
      },
    },
    useStandardContentBlocks: true,
  });
  try {
    const tools = await mcp.getTools();
    assert.deepEqual(tools.map((t) => t.name).sort(),
      toolNames);
    const exec = tools.find((t) => t.name === "execute_python");
    await exec.invoke({ code: "y = 6 * 7" });
    const out = await exec.invoke({ code: "print('answer', y)" });
    const flat = typeof out === "string" ? out : JSON.stringify(out);
    assert.match(flat, /answer 42/);
  } finally {
    await mcp.close();
  }
});
