// Packs the SDK as npm would publish it and installs the tarball into a fresh
// project, offline: what a user gets from the registry, not the source tree.
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
/** sdk/typescript, where package.json is. */
export const sdkDir = fileURLToPath(new URL("../..", import.meta.url));

/** A fresh project with the packed SDK installed and program.ts beside it; returns its directory. */
export async function freshProject(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sessionbox-fresh-"));
  const packs = join(dir, "packs");
  await mkdir(packs);
  await run("npm", ["pack", "--silent", "--pack-destination", packs], { cwd: sdkDir });
  const tarball = (await readdir(packs)).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error(`npm pack left no tarball in ${packs}`);
  const app = join(dir, "app");
  await cp(join(sdkDir, "test", "fresh", "program.ts"), join(app, "program.ts"));
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "fresh", private: true, type: "module" }));
  await writeFile(join(app, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM", "DOM.Iterable"],
      types: [], strict: true, outDir: "out", skipLibCheck: false,
    },
    include: ["program.ts"],
  }));
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", join(packs, tarball)], { cwd: app });
  return app;
}

/** Type-checks and compiles the project with the SDK's own TypeScript. */
export async function compile(app: string): Promise<void> {
  await run(process.execPath, [join(sdkDir, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], { cwd: app });
}
