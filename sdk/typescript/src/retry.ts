/**
 * When and how often idempotent calls are retried on 429 and 503, and any
 * call whose connection was refused (the server never saw it).
 */
export interface RetryOptions {
  /** Retries after the first attempt; 0 turns retrying off. Default 3. */
  maxRetries?: number;
  /** The first backoff when the server gives no Retry-After, doubled per retry. Default 500 ms. */
  baseDelayMs?: number;
  /**
   * The longest wait. A Retry-After asking for more is not shortened: the
   * call fails at once with the server's answer, whose retryAfter says when
   * to come back. Default 30 s.
   */
  maxDelayMs?: number;
  /** Called before each wait, e.g. to log it. */
  onRetry?: (event: RetryEvent) => void;
}

/** A retry about to happen. */
export interface RetryEvent {
  /** The retry's number, from 1. */
  attempt: number;
  /** How long the SDK waits before it. */
  delayMs: number;
  /** The status that caused it; 0 for a connection the server refused (the request never reached it). */
  status: number;
  /** The response's Retry-After in seconds, when it had one. */
  retryAfter: number | undefined;
  method: string;
  url: string;
}

/** The statuses worth retrying: too many requests, and unavailable. */
export const retryableStatuses: ReadonlySet<number> = new Set([429, 503]);

/**
 * The wait before retry `attempt` (from 1): the server's Retry-After when it
 * gave one, else exponential backoff with jitter (between half and all of
 * base * 2^(attempt-1)), capped at maxDelayMs. undefined: do not retry,
 * because the server asked for longer than maxDelayMs.
 */
export function retryDelay(attempt: number, retryAfterSecs: number | undefined, opts: Required<Omit<RetryOptions, "onRetry">>, random: () => number = Math.random): number | undefined {
  if (retryAfterSecs !== undefined) {
    const ms = retryAfterSecs * 1000;
    return ms <= opts.maxDelayMs ? ms : undefined;
  }
  const full = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

/** Resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
