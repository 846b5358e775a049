import type { Problem } from "./types.js";

/**
 * A problem's type: one of the document's closed list of URIs, or
 * about:blank for an answer that was not problem+json (a proxy's page).
 */
export type ProblemType = Problem["type"] | "about:blank";

/** What a SessionboxError is built from: a problem and the response's Retry-After. */
export interface SessionboxErrorInit {
  status: number;
  type: ProblemType;
  title: string;
  detail: string;
  instance?: string | undefined;
  requestId?: string | undefined;
  retryAfter?: number | undefined;
}

/**
 * An error the API answered with (application/problem+json), or an answer
 * that was not one the SDK could use. `type` is the problem's stable URI:
 * switch on it (or on `status`), not on the words of `detail`.
 */
export class SessionboxError extends Error {
  /** The HTTP status, or the problem's own status when it came in a 200 body or a stream line. */
  readonly status: number;
  /** The problem type URI, e.g. https://sessionbox.dev/problems/invalid-input; about:blank when the answer was not a problem. */
  readonly type: ProblemType;
  /** The problem's short title. */
  readonly title: string;
  /** What went wrong, in words a user can act on. */
  readonly detail: string;
  /** The request path the problem is about. */
  readonly instance: string | undefined;
  /** The request's id, also in X-Request-Id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait before trying again (Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(init: SessionboxErrorInit) {
    super(`${init.status} ${init.title}: ${init.detail}`);
    this.name = "SessionboxError";
    this.status = init.status;
    this.type = init.type;
    this.title = init.title;
    this.detail = init.detail;
    this.instance = init.instance;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }

  /** The error for a problem object, with the Retry-After of the response that carried it. */
  static fromProblem(p: Problem, retryAfter?: number): SessionboxError {
    return new SessionboxError({
      status: p.status,
      type: p.type,
      title: p.title,
      detail: p.detail,
      instance: p.instance,
      requestId: p.requestId,
      retryAfter,
    });
  }

  /**
   * Reads a failed response: its problem+json body when it has one, else a
   * problem made of its status and the start of its body (a proxy's HTML page,
   * a storage service's XML error).
   */
  static async fromResponse(res: Response): Promise<SessionboxError> {
    const retryAfter = parseRetryAfter(res.headers.get("Retry-After"));
    const requestId = res.headers.get("X-Request-Id") ?? undefined;
    const text = await res.text().catch(() => "");
    const problem = parseProblem(text);
    if (problem) {
      return SessionboxError.fromProblem({ ...problem, requestId: problem.requestId ?? requestId }, retryAfter);
    }
    const snippet = text.trim().slice(0, 500);
    return new SessionboxError({
      status: res.status,
      type: "about:blank",
      title: res.statusText || `HTTP ${res.status}`,
      detail: snippet || `the server answered ${res.status} with no body`,
      requestId,
      retryAfter,
    });
  }
}

/** A problem object in text, or undefined when the text is not one. */
export function parseProblem(text: string): Problem | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isProblem(v) ? v : undefined;
}

/** Whether a parsed JSON value is a problem object rather than a result. */
export function isProblem(v: unknown): v is Problem {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.type === "string" && typeof o.status === "number" && typeof o.title === "string" &&
    typeof o.detail === "string";
}

/**
 * Seconds from a Retry-After header: delay-seconds or an HTTP date
 * (RFC 9110 10.2.3); undefined when absent or unreadable.
 */
export function parseRetryAfter(v: string | null, now: number = Date.now()): number | undefined {
  if (v === null) return undefined;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Number(s);
  const at = Date.parse(s);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}
