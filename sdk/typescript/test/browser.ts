// Runs test/browser/page.html in headless Chromium: the SDK's dist/ loaded as
// native ES modules from a local static server, calling the API from another
// origin. The page posts a report of what it saw to /report.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("../../", import.meta.url));

/** Chromium: CHROMIUM_PATH, else chromium or chromium-browser on PATH (scripts/setup.sh installs Debian's). */
export function chromiumPath(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of ["chromium", "chromium-browser"]) {
      if (existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return undefined;
}

/** Loads the page with the given query in Chromium and returns its report. */
export async function runPage(chromium: string, query: Record<string, string>): Promise<Record<string, unknown>> {
  let got!: (r: Record<string, unknown>) => void;
  const report = new Promise<Record<string, unknown>>((r) => (got = r));
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "POST" && url.pathname === "/report") {
      let body = "";
      for await (const c of req) body += c;
      res.writeHead(204).end();
      got(JSON.parse(body) as Record<string, unknown>);
      return;
    }
    const file = url.pathname === "/page.html" ? join(pkg, "test/browser/page.html")
      : url.pathname.startsWith("/sdk/") ? normalize(join(pkg, "dist", url.pathname.slice(5))) : undefined;
    if (!file || !file.startsWith(pkg)) {
      res.writeHead(404).end();
      return;
    }
    const body = await readFile(file).catch(() => undefined);
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "Content-Type": file.endsWith(".html") ? "text/html" : "text/javascript" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const profile = await mkdtemp(join(tmpdir(), "sessionbox-sdk-chromium-"));
  const page = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page.html?${new URLSearchParams(query)}`;
  // --no-sandbox: tests run as root in CI, where Chromium's own sandbox cannot start.
  const child = spawn(chromium, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", `--user-data-dir=${profile}`, page],
    { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`chromium exited (${code}) before the page reported:\n${stderr}`))));
  try {
    return await Promise.race([report, exited]);
  } finally {
    child.removeAllListeners("exit");
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await gone;
    }
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    // Chromium's helper processes outlive the browser by a moment and may
    // still write into the profile: removal retries on ENOTEMPTY.
    await rm(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
}
