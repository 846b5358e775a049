import { envVar } from "./env.js";
import { SessionboxError, isProblem } from "./errors.js";
import { collectCommand, collectExecution, wantsLive, withText, type CommandCallbacks, type Execution, type ExecuteCallbacks } from "./execution.js";
import { Transport, type CallOptions, type Request } from "./http.js";
import { readNDJSON } from "./ndjson.js";
import { sleep, type RetryOptions } from "./retry.js";
import type {
  CheckpointInfo,
  CommandInfo,
  CommandList,
  CommandOutput,
  CommandOutputLine,
  CommandRequest,
  CommandResult,
  CommandStarted,
  CommandStreamLine,
  CodeContext,
  ContextList,
  ContextRequest,
  DownloadTicket,
  ExecuteOnceRequest,
  ExecuteRequest,
  ExecuteOutputLine,
  ExecutionResult,
  FileEntry,
  FileList,
  InstallRequest,
  InstallOutputLine,
  InstallResult,
  Run,
  RunAccepted,
  RunRequest,
  SandboxMetrics,
  Session,
  SessionList,
  ExecuteStreamLine,
  FailureLine,
  InstallStreamLine,
  StartRequest,
  StreamLine,
  UploadTicket,
  UploadUrlsRequest,
  UploadUrlsResult,
} from "./types.js";
import { SessionHandle } from "./session.js";
import { inlineBytes, putPresigned, uploadSize, type UploadData, type UploadOptions } from "./upload.js";

/** How to reach the API. */
export interface SessionboxOptions {
  /** The API's base URL, e.g. http://127.0.0.1:8080 or the stack's API URL; default $SESSIONBOX_URL. */
  baseUrl?: string;
  /**
   * The API key (sbx_...) or a bearer token, sent as `Authorization: Bearer`;
   * default $SESSIONBOX_API_KEY. Omit both when `headers` or a proxy authenticate.
   */
  apiKey?: string;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** A fetch to use instead of the global one (tests, proxies, instrumentation). */
  fetch?: typeof fetch;
  /** Retries of idempotent calls on 429 and 503; false turns them off. */
  retry?: RetryOptions | false;
}

/** Options of a file listing. */
export interface ListFilesOptions extends CallOptions {
  /** The directory; default /home/user. */
  path?: string;
  /** Levels to descend, 1 to 10; default 1. */
  depth?: number;
}

/** Options of a page of sessions. */
export interface ListSessionsOptions extends CallOptions {
  /** Sessions per page, 1 to 100; default 20. */
  limit?: number;
  /** The previous page's nextCursor. */
  cursor?: string;
}

/** Options of execute and executeOnce: with any callback the output streams to it as it happens. */
export interface ExecuteOptions extends CallOptions, ExecuteCallbacks {}

/** Options of readCommandOutput. */
export interface ReadCommandOutputOptions extends CallOptions {
  /** Seconds (0–60) to wait for the command's end; the read returns sooner when a read's worth of output waits. Default 0: at once. */
  waitSecs?: number;
}

/** Options of runCommand: with a callback the output streams to it as it happens. */
export interface RunCommandOptions extends CallOptions, CommandCallbacks {}

/** What downloadFile returns for each format. */
export interface DownloadFormats {
  bytes: Uint8Array;
  text: string;
  blob: Blob;
  stream: ReadableStream<Uint8Array>;
}

/** Options of downloadFile. */
export interface DownloadOptions<F extends keyof DownloadFormats = "bytes"> extends CallOptions {
  /** bytes (default), text (UTF-8), blob, or stream (read it to the end or cancel it). */
  format?: F;
}

/** Options of submitRun. */
export interface SubmitRunOptions extends CallOptions {
  /** The same key returns the same run; with one, a 429 or 503 is retried safely. */
  idempotencyKey?: string;
}

/** Options of waitForRun. */
export interface WaitForRunOptions extends CallOptions {
  /** The pause between polls; default 500 ms. */
  intervalMs?: number;
}

const sid = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;

/**
 * A client of the sessionbox API. Every method takes an AbortSignal in its
 * options; failures are SessionboxError (problem+json) or, for a request that
 * never got an answer, fetch's own error. Idempotent calls (GET, PUT, DELETE,
 * and runs with an Idempotency-Key) are retried on 429 and 503; executions,
 * installs and other POSTs never are.
 */
export class Sessionbox {
  private readonly http: Transport;
  private readonly customFetch: boolean;

  constructor(options: SessionboxOptions = {}) {
    const baseUrl = options.baseUrl ?? envVar("SESSIONBOX_URL");
    if (!baseUrl) throw new TypeError("sessionbox: baseUrl is required (or set SESSIONBOX_URL)");
    const r = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
    this.customFetch = options.fetch !== undefined;
    this.http = new Transport({
      baseUrl,
      apiKey: options.apiKey ?? envVar("SESSIONBOX_API_KEY"),
      headers: options.headers,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      retry: {
        maxRetries: r.maxRetries ?? 3,
        baseDelayMs: r.baseDelayMs ?? 500,
        maxDelayMs: r.maxDelayMs ?? 30_000,
        onRetry: r.onRetry,
      },
    });
  }

  // Sessions and sandboxes.

  /**
   * A handle on a session: the same calls without the id. It sends nothing;
   * the first call that needs the sandbox starts it, as the API does.
   */
  session(sessionId: string): SessionHandle {
    return new SessionHandle(this, sessionId);
  }

  /** Starts a session (a fresh id unless given) and returns its handle. */
  async createSession(req: StartRequest & { sessionId?: string } = {}, options?: CallOptions): Promise<SessionHandle> {
    const { sessionId, ...start } = req;
    const h = this.session(sessionId ?? `s-${globalThis.crypto.randomUUID()}`);
    await h.start(start, options);
    return h;
  }

  /** Starts the session's sandbox (or resumes it, or returns the running one). */
  start(sessionId: string, req: StartRequest = {}, options?: CallOptions): Promise<Session> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/sandbox/start`, json: req, idempotent: false, options });
  }

  /** Stops the session's sandbox; the session stays, stopped. */
  stop(sessionId: string, options?: CallOptions): Promise<Session> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/sandbox/stop`, idempotent: false, options });
  }

  /** The session's state and deadlines. */
  status(sessionId: string, options?: CallOptions): Promise<Session> {
    return this.http.json({ method: "GET", path: `${sid(sessionId)}/sandbox`, idempotent: true, options });
  }

  /** The sandbox's resource use now and over the last 5 minutes; starts nothing. */
  metrics(sessionId: string, options?: CallOptions): Promise<SandboxMetrics> {
    return this.http.json({ method: "GET", path: `${sid(sessionId)}/sandbox/metrics`, idempotent: true, options });
  }

  /** Restarts the session's kernel: variables go, files stay. */
  async reset(sessionId: string, options?: CallOptions): Promise<void> {
    await this.discard({ method: "POST", path: `${sid(sessionId)}/reset`, idempotent: false, options });
  }

  /** Saves the session's /home/user to its workspace now. */
  checkpoint(sessionId: string, options?: CallOptions): Promise<CheckpointInfo> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/checkpoint`, idempotent: false, options });
  }

  /** Deletes the session, its sandbox and its workspace. */
  async deleteSession(sessionId: string, options?: CallOptions): Promise<void> {
    await this.discard({ method: "DELETE", path: sid(sessionId), idempotent: true, options });
  }

  /** One page of the caller's sessions; pass nextCursor back as cursor for the next. */
  listSessions(options: ListSessionsOptions = {}): Promise<SessionList> {
    return this.http.json({
      method: "GET",
      path: "/v1/sessions",
      query: { limit: options.limit, cursor: options.cursor },
      idempotent: true,
      options,
    });
  }

  /** Every session of the caller, page after page. */
  async *sessions(options: ListSessionsOptions = {}): AsyncGenerator<Session, void, undefined> {
    let cursor = options.cursor;
    do {
      const page = await this.listSessions({ ...options, cursor });
      yield* page.sessions;
      cursor = page.nextCursor;
    } while (cursor);
  }

  // Code.

  /**
   * Runs Python in the session's kernel and returns the whole result, with
   * `text` (the last expression's value). With callbacks (onStdout, onStderr,
   * onResult, onError) the output reaches them as it happens, through the
   * stream, and the same result is returned at the end. Never retried.
   */
  async execute(sessionId: string, req: ExecuteRequest, options?: ExecuteOptions): Promise<Execution> {
    if (wantsLive(options)) return collectExecution(this.executeStream(sessionId, req, options), options!);
    return withText(await this.result<ExecutionResult>({ method: "POST", path: `${sid(sessionId)}/execute`, json: req, idempotent: false, options }));
  }

  /**
   * Runs Python in the session's kernel and yields its output as it happens:
   * `start`, `stdout`/`stderr` chunks, `result`s, an `error` with the
   * exception when the code raised, `keepalive`s (ignore them), then `done`
   * with the summary (the output is not repeated in it). A call that fails,
   * before or during the stream, throws SessionboxError, as does a stream cut
   * before `done`. Breaking out of the loop or aborting closes the stream.
   */
  executeStream(sessionId: string, req: ExecuteRequest, options?: CallOptions): AsyncGenerator<ExecuteOutputLine, void, undefined> {
    return this.stream<ExecuteStreamLine>({ method: "POST", path: `${sid(sessionId)}/execute/stream`, json: req, idempotent: false, options });
  }

  /** Runs Python once in a sandbox of its own, killed afterwards; no session is kept. Callbacks as for execute. */
  async executeOnce(req: ExecuteOnceRequest, options?: ExecuteOptions): Promise<Execution> {
    if (wantsLive(options)) return collectExecution(this.executeOnceStream(req, options), options!);
    return withText(await this.result<ExecutionResult>({ method: "POST", path: "/v1/execute", json: req, idempotent: false, options }));
  }

  /** executeOnce with live output, as executeStream. */
  executeOnceStream(req: ExecuteOnceRequest, options?: CallOptions): AsyncGenerator<ExecuteOutputLine, void, undefined> {
    return this.stream<ExecuteStreamLine>({ method: "POST", path: "/v1/execute/stream", json: req, idempotent: false, options });
  }

  /** Installs packages with pip in the session's sandbox. */
  install(sessionId: string, req: InstallRequest, options?: CallOptions): Promise<InstallResult> {
    return this.result({ method: "POST", path: `${sid(sessionId)}/install`, json: req, idempotent: false, options });
  }

  /** install with pip's output as it happens, as executeStream. */
  installStream(sessionId: string, req: InstallRequest, options?: CallOptions): AsyncGenerator<InstallOutputLine, void, undefined> {
    return this.stream<InstallStreamLine>({ method: "POST", path: `${sid(sessionId)}/install/stream`, json: req, idempotent: false, options });
  }

  // Runs.

  /** Queues code to run in the session; poll getRun or waitForRun. */
  submitRun(sessionId: string, req: RunRequest, options: SubmitRunOptions = {}): Promise<RunAccepted> {
    const headers = { ...options.headers };
    if (options.idempotencyKey !== undefined) headers["Idempotency-Key"] = options.idempotencyKey;
    return this.http.json({
      method: "POST",
      path: `${sid(sessionId)}/runs`,
      json: req,
      idempotent: options.idempotencyKey !== undefined,
      options: { ...options, headers },
    });
  }

  /** A run's status and, once finished, its result. */
  getRun(runId: string, options?: CallOptions): Promise<Run> {
    return this.http.json({ method: "GET", path: `/v1/runs/${encodeURIComponent(runId)}`, idempotent: true, options });
  }

  /** Polls a run until it has succeeded or failed. */
  async waitForRun(runId: string, options: WaitForRunOptions = {}): Promise<Run> {
    for (;;) {
      const run = await this.getRun(runId, options);
      if (run.status === "succeeded" || run.status === "failed") return run;
      await sleep(options.intervalMs ?? 500, options.signal);
    }
  }

  // Files.

  /** Lists a directory (default /home/user). */
  listFiles(sessionId: string, options: ListFilesOptions = {}): Promise<FileList> {
    return this.http.json({
      method: "GET",
      path: `${sid(sessionId)}/files`,
      query: { path: options.path, depth: options.depth },
      idempotent: true,
      options,
    });
  }

  /** A file's bytes, up to the inline limit (4.5 MB by default; 413 beyond it): downloadFile reads any size. */
  async readFile(sessionId: string, path: string, options?: CallOptions): Promise<Uint8Array> {
    const res = await this.http.send({
      method: "GET",
      path: `${sid(sessionId)}/files/content`,
      query: { path },
      idempotent: true,
      options,
    });
    return new Uint8Array(await res.arrayBuffer());
  }

  /** A file's text, decoded as UTF-8. */
  async readTextFile(sessionId: string, path: string, options?: CallOptions): Promise<string> {
    return new TextDecoder().decode(await this.readFile(sessionId, path, options));
  }

  /**
   * Writes a file in one request, up to the inline limit (413 beyond it):
   * uploadFile writes any size. A string is sent as its UTF-8 bytes.
   */
  writeFile(sessionId: string, path: string, data: string | Uint8Array | ArrayBuffer | Blob, options?: CallOptions): Promise<FileEntry> {
    return this.http.json({
      method: "PUT",
      path: `${sid(sessionId)}/files/content`,
      query: { path },
      bytes: data as BodyInit,
      idempotent: true,
      options,
    });
  }

  /** Removes a file, or a directory with everything in it. */
  async deleteFile(sessionId: string, path: string, options?: CallOptions): Promise<void> {
    await this.discard({ method: "DELETE", path: `${sid(sessionId)}/files`, query: { path }, idempotent: true, options });
  }

  /**
   * Writes a file of any size. Bytes in memory up to `inlineLimit` (default
   * 4 MiB) without onProgress go in one request; the rest goes straight to
   * blob storage: a presigned upload, the bytes sent to it with progress,
   * then imported into the sandbox at path. Returns the file written.
   */
  async uploadFile(sessionId: string, path: string, data: UploadData, options: UploadOptions = {}): Promise<FileEntry> {
    const sizeBytes = uploadSize(data, options.size);
    const inline = inlineBytes(data, sizeBytes, options);
    if (inline) {
      try {
        return await this.writeFile(sessionId, path, inline, options);
      } catch (err) {
        // A deployment with a lower limit than ours: its 413 sends us the long way.
        if (!(err instanceof SessionboxError && err.status === 413)) throw err;
      }
    }
    const contentType = options.contentType ?? (data instanceof Blob && data.type ? data.type : undefined);
    const ticket = await this.http.json<UploadTicket>({
      method: "POST",
      path: `${sid(sessionId)}/files/upload-url`,
      json: { path, sizeBytes, contentType },
      idempotent: false,
      options,
    });
    await putPresigned(ticket, data, sizeBytes, options, {
      fetch: this.http.config.fetch,
      useXHR: !this.customFetch && typeof XMLHttpRequest === "function",
      retry: this.http.config.retry,
    });
    return this.http.json({
      method: "POST",
      path: `${sid(sessionId)}/files/import`,
      json: { transferId: ticket.transferId },
      idempotent: false,
      options,
    });
  }

  /**
   * A file of any size, as bytes, text, a Blob or a stream: read inline, or
   * through a presigned download when the file is past the inline limit.
   */
  downloadFile(sessionId: string, path: string, options?: DownloadOptions<"bytes">): Promise<Uint8Array>;
  downloadFile<F extends keyof DownloadFormats>(sessionId: string, path: string, options: DownloadOptions<F> & { format: F }): Promise<DownloadFormats[F]>;
  async downloadFile(sessionId: string, path: string, options: DownloadOptions<keyof DownloadFormats> = {}): Promise<DownloadFormats[keyof DownloadFormats]> {
    const res = await this.fileResponse(sessionId, path, options);
    switch (options.format ?? "bytes") {
      case "text":
        return res.text();
      case "blob":
        return res.blob();
      case "stream":
        return res.body ?? new Blob([]).stream();
      default:
        return new Uint8Array(await res.arrayBuffer());
    }
  }

  /** A file's content as a stream of any size, as downloadFile with format "stream". */
  readFileStream(sessionId: string, path: string, options?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    return this.downloadFile(sessionId, path, { ...options, format: "stream" });
  }

  /** The response carrying a file's bytes: the inline read, or on its 413 the presigned download. */
  private async fileResponse(sessionId: string, path: string, options: CallOptions): Promise<Response> {
    try {
      return await this.http.send({ method: "GET", path: `${sid(sessionId)}/files/content`, query: { path }, idempotent: true, options });
    } catch (err) {
      if (!(err instanceof SessionboxError && err.status === 413)) throw err;
    }
    const ticket = await this.downloadUrl(sessionId, path, options);
    // The URL carries its own authority: no API key goes to blob storage.
    const res = await this.http.config.fetch(ticket.downloadUrl, { signal: options.signal ?? null });
    if (!res.ok) throw await SessionboxError.fromResponse(res);
    return res;
  }

  /** A presigned URL to download a file of any size, without credentials, until expiresAt. */
  downloadUrl(sessionId: string, path: string, options?: CallOptions): Promise<DownloadTicket> {
    return this.http.json({
      method: "POST",
      path: `${sid(sessionId)}/files/download-url`,
      json: { path },
      idempotent: false,
      options,
    });
  }

  /** Has the service fetch URLs into the sandbox. */
  uploadUrls(sessionId: string, req: UploadUrlsRequest, options?: CallOptions): Promise<UploadUrlsResult> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/files/upload-urls`, json: req, idempotent: false, options });
  }

  // Shell commands.

  /**
   * Runs a shell command (`bash -l -c`) in the session's sandbox and returns
   * how it ended; with onStdout/onStderr its output reaches them as it
   * happens. A non-zero exit is a result. Never retried.
   */
  runCommand(sessionId: string, req: Omit<CommandRequest, "background">, options?: RunCommandOptions): Promise<CommandResult> {
    if (options?.onStdout || options?.onStderr) return collectCommand(this.runCommandStream(sessionId, req, options), options);
    return this.result({ method: "POST", path: `${sid(sessionId)}/commands`, json: { ...req, background: false }, idempotent: false, options });
  }

  /** runCommand with its output as it arrives, as executeStream; `done` carries the CommandSummary. */
  runCommandStream(sessionId: string, req: Omit<CommandRequest, "background">, options?: CallOptions): AsyncGenerator<CommandOutputLine, void, undefined> {
    return this.stream<CommandStreamLine>({ method: "POST", path: `${sid(sessionId)}/commands`, json: { ...req, background: false }, idempotent: false, options });
  }

  /** Starts a shell command in the background and returns its id at once; read it with getCommand or attachCommand. */
  startCommand(sessionId: string, req: Omit<CommandRequest, "background">, options?: CallOptions): Promise<CommandStarted> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/commands`, json: { ...req, background: true }, idempotent: false, options });
  }

  /** The background commands running in the session's sandbox. */
  listCommands(sessionId: string, options?: CallOptions): Promise<CommandList> {
    return this.http.json({ method: "GET", path: `${sid(sessionId)}/commands`, idempotent: true, options });
  }

  /**
   * A background command's status: running, or ended with its exit and the
   * output nobody had read. Not retried: output is delivered once.
   */
  getCommand(sessionId: string, commandId: string, options?: CallOptions): Promise<CommandInfo> {
    return this.http.json({ method: "GET", path: `${sid(sessionId)}/commands/${encodeURIComponent(commandId)}`, idempotent: false, options });
  }

  /** Reattaches to a background command: the output nobody read, live output, then `done`. */
  attachCommand(sessionId: string, commandId: string, options?: CallOptions): AsyncGenerator<CommandOutputLine, void, undefined> {
    return this.stream<CommandStreamLine>({ method: "GET", path: `${sid(sessionId)}/commands/${encodeURIComponent(commandId)}`, idempotent: false, options });
  }

  /**
   * What a background command printed since the last read (by any caller),
   * waiting up to `waitSecs` (0–60, default 0) for it to end, and whether it
   * still runs or its exit code (-1 when a signal ended it). The output is
   * kept in the sandbox (`stdoutPath`, `stderrPath`), so a read loses nothing;
   * `more` says output beyond one read's limit waits for the next. Read until
   * `running` is false and `more` is false to get every line once. Not
   * retried: a read moves the read position.
   */
  readCommandOutput(sessionId: string, commandId: string, options?: ReadCommandOutputOptions): Promise<CommandOutput> {
    return this.http.json({
      method: "GET",
      path: `${sid(sessionId)}/commands/${encodeURIComponent(commandId)}/output`,
      query: { waitSecs: options?.waitSecs },
      idempotent: false,
      options,
    });
  }

  /** Kills a background command's process group. */
  async killCommand(sessionId: string, commandId: string, options?: CallOptions): Promise<void> {
    await this.discard({
      method: "POST",
      path: `${sid(sessionId)}/commands/${encodeURIComponent(commandId)}/kill`,
      idempotent: false,
      options,
    });
  }

  // Contexts.

  /** Creates a kernel context (its own variables, language and working directory) in the session's sandbox. */
  createContext(sessionId: string, req: ContextRequest = {}, options?: CallOptions): Promise<CodeContext> {
    return this.http.json({ method: "POST", path: `${sid(sessionId)}/contexts`, json: req, idempotent: false, options });
  }

  /** The session's contexts. */
  listContexts(sessionId: string, options?: CallOptions): Promise<ContextList> {
    return this.http.json({ method: "GET", path: `${sid(sessionId)}/contexts`, idempotent: true, options });
  }

  /** Restarts one context's kernel: its variables go. */
  async resetContext(sessionId: string, contextId: string, options?: CallOptions): Promise<void> {
    await this.discard({
      method: "POST",
      path: `${sid(sessionId)}/contexts/${encodeURIComponent(contextId)}/reset`,
      idempotent: false,
      options,
    });
  }

  /** Removes a context. */
  async deleteContext(sessionId: string, contextId: string, options?: CallOptions): Promise<void> {
    await this.discard({ method: "DELETE", path: `${sid(sessionId)}/contexts/${encodeURIComponent(contextId)}`, idempotent: true, options });
  }

  // Plumbing.

  /**
   * A JSON result. A call that runs long is answered 200 early and kept alive
   * with spaces; if it then fails, the body is a problem instead of the
   * result, which becomes a SessionboxError here too.
   */
  private async result<T>(req: Request): Promise<T> {
    const body = await this.http.json<unknown>(req);
    if (isProblem(body) && !("success" in body)) throw SessionboxError.fromProblem(body);
    return body as T;
  }

  /**
   * A call's NDJSON lines. Every stream ends with done or failure; one that
   * stops before either (a proxy closing it cleanly, a server gone) is an
   * error too, so a loop never mistakes a cut stream for a finished call.
   */
  private async *stream<L extends StreamLine>(req: Request): AsyncGenerator<Exclude<L, FailureLine>, void, undefined> {
    const res = await this.http.send({ ...req, accept: "application/x-ndjson" });
    if (res.body) {
      for await (const line of readNDJSON<L>(res.body)) {
        if (isFailure(line)) throw SessionboxError.fromProblem(line.problem);
        // isFailure ruled out the one line that is not an output line.
        yield line as Exclude<L, FailureLine>;
        if (line.type === "done") return;
      }
    }
    throw new SessionboxError({
      status: 502,
      type: "about:blank",
      title: "Incomplete stream",
      detail: "the stream ended before its done line: the call's outcome is unknown",
      requestId: res.headers.get("X-Request-Id") ?? undefined,
    });
  }

  private async discard(req: Request): Promise<void> {
    const res = await this.http.send(req);
    await res.body?.cancel().catch(() => {});
  }
}

/** Whether a stream line is the failure line that ends a call failed midway. */
function isFailure(line: StreamLine): line is FailureLine {
  return line.type === "failure";
}
