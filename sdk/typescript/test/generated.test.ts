// src/generated/openapi.ts is committed so the package builds without the
// generator; this holds it to pkg/api/openapi.json.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

it("the generated types are those openapi-typescript makes of the document", async () => {
  const run = promisify(execFile);
  const res = await run("npm", ["run", "--silent", "check-generated"], { cwd: pkg }).then(
    () => ({ ok: true, out: "" }),
    (e: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }),
  );
  assert.ok(res.ok, `src/generated/openapi.ts is stale: run \`npm run generate\` in sdk/typescript\n${res.out}`);
});
