// `npm run bench`: what the SDK costs over raw fetch against the same API, and
// the NDJSON reader's throughput against reading the whole body and splitting
// it. Figures: median and p99 per call, and the ratio SDK/baseline from the
// same run, calls interleaved so both see the same machine.
import { Sessionbox, readNDJSON } from "@sessionbox/sdk";
import { sessionId, startApi } from "./harness.js";

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

function line(name: string, sdk: number[], base: number[]): void {
  const unit = "ms";
  const f = (v: number) => v.toFixed(3);
  console.log(`${name}: sdk median ${f(quantile(sdk, 0.5))} ${unit} p99 ${f(quantile(sdk, 0.99))} ${unit} | ` +
    `baseline median ${f(quantile(base, 0.5))} ${unit} p99 ${f(quantile(base, 0.99))} ${unit} | ` +
    `ratio median ${(quantile(sdk, 0.5) / quantile(base, 0.5)).toFixed(3)} (n=${sdk.length})`);
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const api = await startApi();
const sb = new Sessionbox({ baseUrl: api.baseUrl, apiKey: api.apiKey });
const sid = sessionId("bench");
const n = Number(process.env.BENCH_N ?? 200);
try {
  const headers = { Authorization: `Bearer ${api.apiKey}`, "Content-Type": "application/json" };
  const url = `${api.baseUrl}/v1/sessions/${sid}/execute`;
  const body = JSON.stringify({ code: "1 + 1" });
  await sb.execute(sid, { code: "1 + 1" });

  const sdkExec: number[] = [], rawExec: number[] = [];
  for (let i = 0; i < n; i++) {
    sdkExec.push(await time(() => sb.execute(sid, { code: "1 + 1" })));
    rawExec.push(await time(async () => (await fetch(url, { method: "POST", headers, body })).json()));
  }
  line("execute '1 + 1'", sdkExec, rawExec);

  const code = "for i in range(200):\n    print(i, flush=True)";
  const sdkStream: number[] = [], rawStream: number[] = [];
  for (let i = 0; i < n / 2; i++) {
    sdkStream.push(await time(async () => {
      for await (const _ of sb.executeStream(sid, { code })) { /* drain */ }
    }));
    rawStream.push(await time(async () => {
      const res = await fetch(`${url}/stream`, { method: "POST", headers: { ...headers, Accept: "application/x-ndjson" }, body: JSON.stringify({ code }) });
      (await res.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    }));
  }
  line("executeStream of 200 prints, drained", sdkStream, rawStream);

  // In memory: 20 MB of stdout lines in 64 KiB chunks.
  const enc = new TextEncoder();
  const one = enc.encode(JSON.stringify({ type: "stdout", text: "x".repeat(200) + "\u20ac\n" }) + "\n");
  const total = new Uint8Array(Math.floor((20 << 20) / one.length) * one.length);
  for (let o = 0; o < total.length; o += one.length) total.set(one, o);
  const chunked = () => {
    let o = 0;
    return new ReadableStream<Uint8Array>({
      pull(c) {
        if (o >= total.length) return c.close();
        c.enqueue(total.subarray(o, (o += 65536)));
      },
    });
  };
  const sdkRead: number[] = [], naive: number[] = [];
  for (let i = 0; i < 20; i++) {
    sdkRead.push(await time(async () => {
      for await (const _ of readNDJSON(chunked())) { /* drain */ }
    }));
    naive.push(await time(async () => {
      (await new Response(chunked()).text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    }));
  }
  line(`readNDJSON of ${(total.length / 1e6).toFixed(0)} MB in 64 KiB chunks`, sdkRead, naive);
} finally {
  await sb.deleteSession(sid).catch(() => {});
  await api.close();
}
