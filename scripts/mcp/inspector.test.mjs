// sessionbox's MCP server through the official MCP inspector in CLI mode
// (@modelcontextprotocol/inspector --cli), over stdio (`sessionbox mcp`)
// and streamable HTTP (/v1/mcp): schemas with bounds, every result under
// the cap, an image with text, a bad key refused at start. e2e's
// TestMCPInspector runs this against a local stack; by hand:
//   SESSIONBOX_URL=http://127.0.0.1:8080 SESSIONBOX_API_KEY=sbx_... \
//   SESSIONBOX_BIN=bin/sessionbox node --test scripts/mcp/inspector.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const url = need("SESSIONBOX_URL");
const key = need("SESSIONBOX_API_KEY");
const bin = need("SESSIONBOX_BIN");
const inspector = fileURLToPath(new URL("../node_modules/.bin/mcp-inspector", import.meta.url));
const cap = 24 * 1024;

// inspect runs the inspector's CLI once and resolves to its exit code and
// output; a JSON answer is parsed.
const inspect = (target, args) =>
  new Promise((resolve) => {
    execFile(inspector, ["--cli", ...target, ...args], { timeout: 180_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      let json;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, json });
    });
  });

const targets = {
  stdio: (session, apiKey = key) => [bin, "mcp", "--session", session, "-e", `SESSIONBOX_URL=${url}`, "-e", `SESSIONBOX_API_KEY=${apiKey}`],
  http: (session) => [`${url}/v1/mcp?session=${session}`, "--transport", "http", "--header", `Authorization: Bearer ${key}`],
};

const call = async (target, tool, args = {}) => {
  const pairs = Object.entries(args).map(([k, v]) => `${k}=${v}`);
  const res = await inspect(target, ["--method", "tools/call", "--tool-name", tool, ...(pairs.length ? ["--tool-arg", ...pairs] : [])]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.ok(res.json, res.stdout);
  return res.json;
};

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

for (const [name, target] of Object.entries(targets)) {
  test(`tools/list over ${name} shows bounds in the schemas`, async () => {
    const res = await inspect(target(`insp-list-${name}`), ["--method", "tools/list"]);
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const tools = Object.fromEntries(res.json.tools.map((t) => [t.name, t]));
    const prop = (tool, p) => tools[tool].inputSchema.properties[p];
    assert.deepEqual([prop("execute_python", "timeoutSecs").minimum, prop("execute_python", "timeoutSecs").maximum], [1, 900]);
    assert.equal(prop("run_command", "timeoutSecs").maximum, 900);
    assert.equal(prop("list_files", "depth").maximum, 10);
    assert.equal(prop("install_packages", "packages").type, "array");
    assert.equal(prop("install_packages", "packages").minItems, 1);
    assert.deepEqual(prop("write_file", "encoding").enum, ["utf-8", "base64"]);
    assert.equal(prop("read_file", "length").maximum, cap - 256);
    assert.deepEqual([prop("read_command_output", "waitSecs").minimum, prop("read_command_output", "waitSecs").maximum], [1, 60]);
    for (const t of ["execute_python", "run_command", "write_file", "start_command", "read_command_output"]) {
      assert.equal(tools[t].outputSchema?.type, "object", `${t} declares an outputSchema`);
    }
    for (const t of Object.values(tools)) {
      for (const r of t.inputSchema.required ?? []) {
        assert.equal(typeof t.inputSchema.properties[r].type, "string", `${t.name}.${r} has one plain type`);
      }
    }
  });
}

test("every tool result stays under the cap", async () => {
  const session = `insp-cap-${randomUUID().slice(0, 8)}`;
  const target = targets.http(session);
  const results = [
    await call(target, "execute_python", { code: "print('y' * 300_000)" }),
    await call(target, "run_command", { cmd: "seq 1 100000" }),
  ];
  await call(target, "run_command", { cmd: "head -c 3000000 /dev/zero | tr '\\0' 'z' > big.txt" });
  results.push(await call(target, "read_file", { path: "big.txt" }));
  results.push(await call(target, "list_files", { path: "/usr/lib/python3", depth: 2 }));
  for (const res of results) {
    assert.ok(!res.isError, text(res).slice(0, 300));
    const n = Buffer.byteLength(text(res));
    assert.ok(n <= cap, `a result text of ${n} bytes: ${text(res).slice(0, 200)}`);
    assert.ok(JSON.stringify(res.structuredContent ?? {}).length < 512, "small structured content");
  }
  assert.match(text(results[0]), /the whole text is in \S+/);
  assert.match(text(results[2]), /of 3000000; read on with offset/);
});

test("an image comes with text saying what it is", async () => {
  const res = await call(targets.stdio(`insp-img-${randomUUID().slice(0, 8)}`), "execute_python",
    { code: "import matplotlib.pyplot as plt; plt.plot([1, 4, 9]); plt.show()" });
  assert.ok(!res.isError, text(res));
  const i = res.content.findIndex((c) => c.type === "image");
  assert.ok(i > 0, JSON.stringify(res.content).slice(0, 300));
  assert.equal(res.content[i].mimeType, "image/png");
  assert.equal(res.content[i - 1].type, "text");
  assert.match(res.content[i - 1].text, /^\[image 1: a png the code displayed/);
  assert.ok(res.content.every((c) => c.type !== "text" || c.text !== ""), "no empty text block");
});

test("sessionbox mcp with a bad key is refused at start", async () => {
  const res = await inspect(targets.stdio("insp-badkey", "sbx_not_a_key_0123456789"), ["--method", "tools/list"]);
  assert.notEqual(res.code, 0, res.stdout);
  assert.equal(res.json?.tools, undefined, "no tools listed");
  assert.match(res.stderr + res.stdout, /refused SESSIONBOX_API_KEY/);
});
