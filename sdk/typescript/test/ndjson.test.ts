import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readLines, readNDJSON } from "@sessionbox/sdk";

/** A byte stream that delivers the given chunks one by one. */
function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]!);
      else c.close();
    },
  });
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

const enc = new TextEncoder();

describe("readNDJSON", () => {
  const lines = [
    { type: "start" },
    { type: "stdout", text: "h\u00e9llo \u20ac \u{1F600}\n" },
    { type: "result", result: { text: "\u4e2d\u6587", isMainResult: true } },
    { type: "done", summary: { success: true } },
  ];
  const bytes = enc.encode(lines.map((l) => JSON.stringify(l)).join("\n") + "\n");

  it("reads the same lines whatever two chunks the bytes are split into", async () => {
    // Every cut point, including those inside a multi-byte UTF-8 character.
    for (let cut = 0; cut <= bytes.length; cut++) {
      const got = await collect(readNDJSON(streamOf([bytes.subarray(0, cut), bytes.subarray(cut)])));
      assert.deepEqual(got, lines, `split at byte ${cut}`);
    }
  });

  it("reads the same lines from one-byte chunks", async () => {
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
    assert.deepEqual(await collect(readNDJSON(streamOf(chunks))), lines);
  });

  it("reads a last line that has no newline", async () => {
    const noNL = bytes.subarray(0, bytes.length - 1);
    assert.deepEqual(await collect(readNDJSON(streamOf([noNL.subarray(0, 10), noNL.subarray(10)]))), lines);
  });

  it("tolerates CRLF endings and blank lines", async () => {
    const text = '{"a":1}\r\n\r\n\n{"a":2}\r\n';
    assert.deepEqual(await collect(readNDJSON(streamOf([enc.encode(text)]))), [{ a: 1 }, { a: 2 }]);
  });

  it("names a line that is not JSON", async () => {
    await assert.rejects(collect(readNDJSON(streamOf([enc.encode('{"a":1}\n<html>bad gateway</html>\n')]))), /not JSON: "<html>bad gateway/);
  });

  it("refuses bytes that are not UTF-8", async () => {
    await assert.rejects(collect(readLines(streamOf([Uint8Array.of(0x22, 0xff, 0x22, 0x0a)]))), TypeError);
  });

  it("cancels the stream when the reader stops early", async () => {
    let cancelled = false;
    const s = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(enc.encode('{"n":1}\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const v of readNDJSON<{ n: number }>(s)) {
      assert.equal(v.n, 1);
      break;
    }
    assert.ok(cancelled, "the stream was cancelled");
  });
});
