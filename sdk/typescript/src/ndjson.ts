/**
 * Reads newline-delimited text from a byte stream. Lines may span chunks, a
 * multi-byte UTF-8 character may be split between chunks (TextDecoder in
 * streaming mode holds its first bytes back), and the last line may lack its
 * newline. "\r\n" endings and blank lines are tolerated. Stopping early (a
 * `break` in for-await) cancels the stream, which closes the connection.
 */
export async function* readLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let buf = "";
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // Search only the newly decoded text, so a long line arriving in many
      // chunks is scanned once.
      let from = buf.length;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      let start = 0;
      while ((nl = buf.indexOf("\n", from)) >= 0) {
        const line = trimCR(buf.slice(start, nl));
        start = from = nl + 1;
        if (line.trim() !== "") yield line;
      }
      buf = buf.slice(start);
    }
    finished = true;
    buf += decoder.decode();
    const last = trimCR(buf);
    if (last.trim() !== "") yield last;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function trimCR(s: string): string {
  return s.endsWith("\r") ? s.slice(0, -1) : s;
}

/**
 * Parses each line of an NDJSON byte stream as JSON. A line that is not JSON
 * is an error naming its start, so a proxy's interjection is not mistaken for
 * the service's output.
 */
export async function* readNDJSON<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T, void, undefined> {
  for await (const line of readLines(body)) {
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new SyntaxError(`sessionbox: a stream line is not JSON: ${JSON.stringify(line.slice(0, 200))}`, {
        cause: err,
      });
    }
    yield v as T;
  }
}
