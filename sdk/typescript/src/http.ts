import { SessionboxError, parseRetryAfter } from "./errors.js";
import { retryDelay, retryableStatuses, sleep, type RetryOptions } from "./retry.js";

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call: the request, a retry's wait, a stream being read. */
  signal?: AbortSignal;
  /** Extra request headers, e.g. X-Request-Id to correlate with the server's logs. */
  headers?: Record<string, string>;
}

/** A request as the transport sends it. */
export interface Request {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  /** A JSON value (sent as application/json) or raw bytes (sent as application/octet-stream). */
  json?: unknown;
  bytes?: BodyInit;
  accept?: string;
  /** Safe to send again: the SDK retries it on 429 and 503. */
  idempotent: boolean;
  options?: CallOptions | undefined;
}

/** How the transport reaches the API. */
export interface TransportConfig {
  baseUrl: string;
  apiKey?: string | undefined;
  headers?: Record<string, string> | undefined;
  fetch: typeof fetch;
  retry: Required<Omit<RetryOptions, "onRetry">> & Pick<RetryOptions, "onRetry">;
}

/**
 * Sends requests: the key, JSON bodies, retries of idempotent calls on 429 and
 * 503 (honouring Retry-After), and a SessionboxError for any answer that is
 * not a success.
 */
export class Transport {
  constructor(readonly config: TransportConfig) {}

  /** The absolute URL of an API path with its query. */
  url(path: string, query?: Record<string, string | number | undefined>): string {
    const u = new URL(this.config.baseUrl.replace(/\/+$/, "") + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  /** Sends req and returns its successful response, or throws SessionboxError. */
  async send(req: Request): Promise<Response> {
    const url = this.url(req.path, req.query);
    const headers = this.headers(req);
    const body = req.json !== undefined ? JSON.stringify(req.json) : req.bytes;
    const signal = req.options?.signal;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      let res: Response;
      try {
        res = await this.config.fetch(url, { method: req.method, headers, body: body ?? null, signal: signal ?? null });
      } catch (err) {
        // A refused connection: the server never saw the request, so any call may be sent again.
        const pause = neverSent(err, signal) && attempt <= this.config.retry.maxRetries
          ? retryDelay(attempt, undefined, this.config.retry)
          : undefined;
        if (pause === undefined) throw unreachable(url, err, signal);
        this.config.retry.onRetry?.({ attempt, delayMs: pause, status: 0, retryAfter: undefined, method: req.method, url });
        await sleep(pause, signal);
        continue;
      }
      if (res.ok) return res;
      const delay = this.retryWait(req, res, attempt);
      if (delay === undefined) throw await SessionboxError.fromResponse(res);
      await res.body?.cancel().catch(() => {});
      this.config.retry.onRetry?.({
        attempt,
        delayMs: delay,
        status: res.status,
        retryAfter: parseRetryAfter(res.headers.get("Retry-After")),
        method: req.method,
        url,
      });
      await sleep(delay, signal);
    }
  }

  /** Sends req and parses its JSON answer. */
  async json<T>(req: Request): Promise<T> {
    const res = await this.send({ accept: "application/json", ...req });
    return (await res.json()) as T;
  }

  private headers(req: Request): Headers {
    const h = new Headers(this.config.headers);
    if (this.config.apiKey) h.set("Authorization", `Bearer ${this.config.apiKey}`);
    if (req.accept) h.set("Accept", req.accept);
    if (req.json !== undefined) h.set("Content-Type", "application/json");
    else if (req.bytes !== undefined) h.set("Content-Type", "application/octet-stream");
    for (const [k, v] of Object.entries(req.options?.headers ?? {})) h.set(k, v);
    return h;
  }

  /** The wait before the next attempt, or undefined to give up with this answer. */
  private retryWait(req: Request, res: Response, attempt: number): number | undefined {
    if (!req.idempotent || !retryableStatuses.has(res.status) || attempt > this.config.retry.maxRetries) {
      return undefined;
    }
    return retryDelay(attempt, parseRetryAfter(res.headers.get("Retry-After")), this.config.retry);
  }
}

/** Connection failures where the request cannot have reached the server (Node's codes; browsers give none). */
const notSentCodes = new Set(["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT"]);

/** Whether fetch failed before the request reached the server. */
function neverSent(err: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted || !(err instanceof Error)) return false;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && notSentCodes.has(code);
}

/**
 * fetch's own failure, named: "fetch failed" says neither where nor why.
 * Aborts pass through untouched, so callers can tell them by name.
 */
function unreachable(url: string, err: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted || !(err instanceof Error) || err.name === "AbortError") return err;
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  const why = cause && cause !== err.message ? `${err.message}: ${cause}` : err.message;
  return new TypeError(`sessionbox: no answer from ${new URL(url).origin}: ${why}`, { cause: err });
}
