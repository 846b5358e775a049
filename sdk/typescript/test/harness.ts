// The API the live tests talk to: SESSIONBOX_URL and SESSIONBOX_API_KEY when
// both are set, else a `sessionbox serve` built from this repository and
// started on a free port with a temporary data dir and a generated key.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** A running API and how to stop it. */
export interface Api {
  baseUrl: string;
  apiKey: string;
  /** True when the tests started the server themselves. */
  local: boolean;
  close(): Promise<void>;
}

/** The repository's root: the nearest directory above this file with a go.mod. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "go.mod"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("no go.mod above the tests: run them inside the sessionbox repository or set SESSIONBOX_URL");
    dir = up;
  }
  return dir;
}

/** The API under test. */
export async function startApi(): Promise<Api> {
  const url = process.env.SESSIONBOX_URL;
  const key = process.env.SESSIONBOX_API_KEY;
  if (url && key) return { baseUrl: url, apiKey: key, local: false, close: async () => {} };
  return startServe();
}

async function startServe(): Promise<Api> {
  const dir = await mkdtemp(join(tmpdir(), "sessionbox-sdk-"));
  const bin = join(dir, "sessionbox");
  await promisify(execFile)("go", ["build", "-o", bin, "./cmd/sessionbox"], { cwd: repoRoot() });
  const apiKey = `sbx_${randomBytes(16).toString("hex")}`;
  const child = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--data-dir", join(dir, "data"), "--api-keys", `sdk=${apiKey}`,
    "--min-free-mib", "-1"], { stdio: ["ignore", "pipe", "pipe"] });
  let logs = "";
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const onData = (b: Buffer) => {
      logs += b.toString();
      const m = /serving on (http:\/\/\S+)/.exec(logs);
      if (m?.[1]) resolve(m[1]);
    };
    child.stderr!.on("data", onData);
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`sessionbox serve exited with ${code} before serving:\n${logs}`)));
    child.once("error", reject);
  });
  return {
    baseUrl,
    apiKey,
    local: true,
    close: async () => {
      await stop(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Stops serve with SIGTERM (it kills its sandboxes on the way out) and waits for it. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

/** A session id no other run of the tests uses. */
export function sessionId(name: string): string {
  return `sdk-${name}-${randomBytes(4).toString("hex")}`;
}
