/**
 * @sessionbox/sdk: a client of the sessionbox API for Node 20+ and browsers.
 * It uses only fetch, ReadableStream and AbortSignal (and XMLHttpRequest in
 * browsers, for upload progress).
 *
 * ```ts
 * import { Sessionbox } from "@sessionbox/sdk";
 * const sb = new Sessionbox(); // SESSIONBOX_URL, SESSIONBOX_API_KEY
 * const s = sb.session("chat-42");
 * const run = await s.execute("print('hi')\n6 * 7", { onStdout: (t) => process.stdout.write(t) });
 * console.log(run.text); // "42"
 * ```
 */
export { Sessionbox } from "./client.js";
export type {
  DownloadFormats,
  DownloadOptions,
  ExecuteOptions,
  ListFilesOptions,
  ListSessionsOptions,
  ReadCommandOutputOptions,
  RunCommandOptions,
  SessionboxOptions,
  SubmitRunOptions,
  WaitForRunOptions,
} from "./client.js";
export type { CommandCallbacks, ExecuteCallbacks, Execution } from "./execution.js";
export { SessionCommands, SessionContexts, SessionFiles, SessionHandle } from "./session.js";
export type { CreateSessionOptions } from "./session.js";
export { SessionboxError, parseRetryAfter } from "./errors.js";
export type { ProblemType, SessionboxErrorInit } from "./errors.js";
export type { CallOptions } from "./http.js";
export { readLines, readNDJSON } from "./ndjson.js";
export type { RetryEvent, RetryOptions } from "./retry.js";
export type { UploadData, UploadOptions, UploadProgress } from "./upload.js";
export type * from "./types.js";
