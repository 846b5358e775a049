import { SessionboxError, parseRetryAfter } from "./errors.js";
import type { CallOptions } from "./http.js";
import { retryDelay, retryableStatuses, sleep, type RetryOptions } from "./retry.js";
import type { UploadTicket } from "./types.js";

/**
 * What uploadFile sends: in browsers a Blob or File; in Node a Buffer, a
 * Uint8Array, or a stream (a web ReadableStream, or a Node Readable, which is
 * an AsyncIterable of Buffers); anywhere an ArrayBuffer or any async iterable
 * of byte chunks. Streams need `size`.
 */
export type UploadData = Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/** How far an upload has gone. */
export interface UploadProgress {
  /** Bytes handed to the network so far. */
  loaded: number;
  /** Bytes in all. */
  total: number;
}

/** Options of uploadFile. */
export interface UploadOptions extends CallOptions {
  /** The bytes the data holds: required for streams, checked against what they yield. */
  size?: number;
  /** The file's media type; default a File's or Blob's own type, else guessed by the server from the path. */
  contentType?: string;
  /** Called with 0 first, as bytes go out, and with the total once all are sent. Forces the presigned upload. */
  onProgress?: (progress: UploadProgress) => void;
  /**
   * Bytes in memory up to this size (and no onProgress) are written in one
   * request, saving the presigned round trips; default 4 MiB, under the API's
   * inline limit. 0 always takes the presigned way.
   */
  inlineLimit?: number;
}

/** The default of UploadOptions.inlineLimit. */
export const defaultInlineLimit = 4 * 1024 * 1024;

/** The bytes to write in one request, or undefined when the upload takes the presigned way. */
export function inlineBytes(data: UploadData, size: number, opts: UploadOptions): Uint8Array | Blob | undefined {
  // An empty file has nothing to presign.
  if (size > (opts.inlineLimit ?? defaultInlineLimit) || (opts.onProgress && size > 0)) return undefined;
  if (data instanceof Blob) return data;
  if (isBytes(data)) return asUint8(data);
  return size === 0 ? new Uint8Array(0) : undefined;
}

/** Chunks of in-memory data are this big, so progress moves in steps a user can see. */
const chunkBytes = 64 * 1024;

/** The size of the data, from the data itself or from the option; an error when neither says. */
export function uploadSize(data: UploadData, size: number | undefined): number {
  const own = data instanceof Blob ? data.size : isBytes(data) ? data.byteLength : undefined;
  if (own !== undefined) {
    if (size !== undefined && size !== own) {
      throw new RangeError(`sessionbox: size is ${size} but the data holds ${own} bytes`);
    }
    return own;
  }
  if (size === undefined || !Number.isSafeInteger(size) || size < 0) {
    throw new TypeError("sessionbox: uploadFile of a stream needs options.size, its length in bytes");
  }
  return size;
}

function isBytes(d: UploadData): d is ArrayBuffer | ArrayBufferView {
  return d instanceof ArrayBuffer || ArrayBuffer.isView(d);
}

function asUint8(d: ArrayBuffer | ArrayBufferView): Uint8Array {
  return d instanceof ArrayBuffer ? new Uint8Array(d) : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

/** The data as an iterator of byte chunks, whatever form it came in. */
async function* chunksOf(data: UploadData): AsyncGenerator<Uint8Array, void, undefined> {
  if (data instanceof Blob) {
    yield* readStream(data.stream());
  } else if (isBytes(data)) {
    const all = asUint8(data);
    for (let i = 0; i < all.byteLength; i += chunkBytes) yield all.subarray(i, i + chunkBytes);
  } else if (data instanceof ReadableStream) {
    yield* readStream(data);
  } else {
    const enc = new TextEncoder();
    for await (const c of data) yield typeof c === "string" ? enc.encode(c) : c;
  }
}

/** A stream's chunks through its reader: browsers other than Firefox cannot for-await a ReadableStream. */
async function* readStream(s: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
  const reader = s.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/**
 * A request body that reports progress as the transport pulls it, and fails
 * when the data holds more or fewer bytes than announced (the presigned
 * request is signed for exactly that many).
 */
function progressBody(data: UploadData, total: number, onProgress: UploadOptions["onProgress"], failure: { error?: Error }): ReadableStream<Uint8Array> {
  const it = chunksOf(data);
  let loaded = 0;
  const fail = (c: ReadableStreamDefaultController<Uint8Array>, e: Error) => {
    failure.error = e;
    c.error(e);
  };
  return new ReadableStream<Uint8Array>(
    {
      start() {
        onProgress?.({ loaded: 0, total });
      },
      async pull(c) {
        const { value, done } = await it.next();
        if (done) {
          if (loaded !== total) fail(c, new RangeError(`sessionbox: the data held ${loaded} bytes, not the ${total} announced`));
          else c.close();
          return;
        }
        loaded += value.byteLength;
        if (loaded > total) {
          fail(c, new RangeError(`sessionbox: the data holds more than the ${total} bytes announced`));
          return;
        }
        c.enqueue(value);
        onProgress?.({ loaded, total });
      },
      async cancel() {
        await it.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

/** Whether the data can be read again, so a failed PUT may be retried. */
function rereadable(data: UploadData): boolean {
  return data instanceof Blob || isBytes(data);
}

/** What putPresigned needs besides the ticket and the data. */
export interface PutConfig {
  fetch: typeof fetch;
  /** Use XMLHttpRequest (browsers), whose upload events give progress; fetch cannot stream a body over HTTP/1.1 there. */
  useXHR: boolean;
  retry: Required<Omit<RetryOptions, "onRetry">> & Pick<RetryOptions, "onRetry">;
}

/** Sends the data to a presigned upload, retrying a 503 (storage's SlowDown) when the data can be read again. */
export async function putPresigned(ticket: UploadTicket, data: UploadData, total: number, opts: UploadOptions, cfg: PutConfig): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    opts.signal?.throwIfAborted();
    const res = cfg.useXHR ? await putXHR(ticket, data, total, opts) : await putFetch(ticket, data, total, opts, cfg.fetch);
    if (res.ok) {
      opts.onProgress?.({ loaded: total, total });
      return;
    }
    const retryAfter = parseRetryAfter(res.headers.get("Retry-After"));
    const delay = rereadable(data) && retryableStatuses.has(res.status) && attempt <= cfg.retry.maxRetries
      ? retryDelay(attempt, retryAfter, cfg.retry)
      : undefined;
    if (delay === undefined) throw await SessionboxError.fromResponse(res);
    cfg.retry.onRetry?.({ attempt, delayMs: delay, status: res.status, retryAfter, method: ticket.method, url: ticket.uploadUrl });
    await sleep(delay, opts.signal);
  }
}

async function putFetch(ticket: UploadTicket, data: UploadData, total: number, opts: UploadOptions, fetchFn: typeof fetch): Promise<Response> {
  const failure: { error?: Error } = {};
  const init: RequestInit & { duplex: "half" } = {
    method: ticket.method,
    headers: ticket.headers,
    body: progressBody(data, total, opts.onProgress, failure),
    signal: opts.signal ?? null,
    duplex: "half",
  };
  try {
    return await fetchFn(ticket.uploadUrl, init);
  } catch (err) {
    throw failure.error ?? err;
  }
}

/** Browsers: XMLHttpRequest, for upload progress over HTTP/1.1 with a fixed length, as presigned URLs need. */
async function putXHR(ticket: UploadTicket, data: UploadData, total: number, opts: UploadOptions): Promise<Response> {
  const body = rereadable(data) ? (data as Blob | ArrayBuffer | ArrayBufferView) : await new Response(progressBody(data, total, undefined, {})).blob();
  opts.onProgress?.({ loaded: 0, total });
  // The callback may have aborted: an XHR aborted before send cannot be sent.
  opts.signal?.throwIfAborted();
  return new Promise<Response>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(ticket.method, ticket.uploadUrl);
    for (const [k, v] of Object.entries(ticket.headers)) {
      // The browser sets Content-Length itself and refuses it from scripts.
      if (k.toLowerCase() !== "content-length") xhr.setRequestHeader(k, v);
    }
    xhr.upload.onprogress = (e) => opts.onProgress?.({ loaded: e.loaded, total });
    const onAbort = () => xhr.abort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const settle = () => opts.signal?.removeEventListener("abort", onAbort);
    xhr.onload = () => {
      settle();
      const headers = new Headers();
      const ra = xhr.getResponseHeader("Retry-After");
      if (ra !== null) headers.set("Retry-After", ra);
      resolve(new Response(xhr.status === 204 ? null : xhr.responseText, { status: xhr.status, statusText: xhr.statusText, headers }));
    };
    xhr.onerror = () => {
      settle();
      reject(new TypeError(`sessionbox: the upload to ${new URL(ticket.uploadUrl).host} failed on the network`));
    };
    xhr.onabort = () => {
      settle();
      reject(opts.signal?.reason ?? new DOMException("The upload was aborted", "AbortError"));
    };
    xhr.send(body as XMLHttpRequestBodyInit);
  });
}
