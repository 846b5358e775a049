// A program of a project that installed the packed SDK, type-checked and run
// by pack.ts: session, execute with callbacks, a chart, 20 MiB up and down,
// a command. It uses only the package and the platform (no @types/node), so
// it type-checks as a browser or Node project would.
import { SessionHandle, SessionboxError, type Result } from "@sessionbox/sdk";

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`fresh project: ${what}`);
}

async function sha256(data: Uint8Array): Promise<string> {
  // A copy: digest wants bytes over an ArrayBuffer, not any ArrayBufferLike.
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(data)));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// SESSIONBOX_URL and SESSIONBOX_API_KEY come from the environment.
const s = await SessionHandle.create();
const out: string[] = [];
const results: Result[] = [];
const run = await s.execute(
  "import matplotlib.pyplot as plt\nprint('drawing', flush=True)\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n6 * 7",
  { onStdout: (t) => void out.push(t), onResult: (r) => void results.push(r) },
);
check(run.success && run.text === "42", `execute gave ${JSON.stringify(run.text)}`);
check(out.join("") === "drawing\n", `onStdout saw ${JSON.stringify(out)}`);
const png = results.find((r) => r.png)?.png ?? "";
check(atob(png.slice(0, 12)).startsWith("\x89PNG"), "the chart came as a PNG result");
check(run.results.length === results.length, "the result holds what the callbacks saw");

// 20 MiB: past the inline limit both ways, so presigned up and down.
const big = new Uint8Array(20 * 1024 * 1024);
let x = 2463534242;
for (let i = 0; i < big.length; i++) {
  x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
  big[i] = x & 0xff;
}
const entry = await s.files.write("data/big.bin", big);
check(entry.size === big.length, `wrote ${entry.size} bytes`);
const back = await s.files.read("data/big.bin");
check(back.length === big.length && (await sha256(back)) === (await sha256(big)), "read back byte-exact");
let streamed = 0;
const reader = (await s.files.readStream("data/big.bin")).getReader();
for (let r = await reader.read(); !r.done; r = await reader.read()) streamed += r.value.byteLength;
check(streamed === big.length, `streamed ${streamed} bytes`);

const cmd = await s.commands.run("sha256sum data/big.bin | cut -c1-64");
check(cmd.exitCode === 0 && cmd.stdout.trim() === (await sha256(big)), `the sandbox's sha256: ${cmd.stdout}`);

try {
  await s.execute("");
  check(false, "an empty code was accepted");
} catch (err) {
  check(err instanceof SessionboxError && err.status === 400, String(err));
}
await s.delete();
console.log(JSON.stringify({ text: run.text, stdout: out.join(""), png: png.length, bytes: back.length, sha256: cmd.stdout.trim() }));
