// src/generated/openapi.ts is committed so the package builds without the
// generator; this holds it to pkg/api/openapi.json.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = fileURLToPath(new URL("../../", import.meta.url));

it("the generated types are those openapi-typescript makes of the document", async () => {
  // The package's own check-generated script, run with node directly (npm's start-up is slow).
  const manifest = JSON.parse(await readFile(join(pkg, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const [tool, ...args] = manifest.scripts["check-generated"]!.split(" ");
  assert.equal(tool, "openapi-typescript");
  const cli = join(pkg, "node_modules/openapi-typescript/bin/cli.js");
  const res = await promisify(execFile)(process.execPath, [cli, ...args], { cwd: pkg }).then(
    () => ({ ok: true, out: "" }),
    (e: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
  );
  assert.ok(res.ok, `src/generated/openapi.ts is stale: run \`npm run generate\` in sdk/typescript\n${res.out}`);
});
