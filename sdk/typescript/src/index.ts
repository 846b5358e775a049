/**
 * @sessionbox/sdk: a client of the sessionbox API for Node 20+ and browsers.
 * It uses only fetch, ReadableStream and AbortSignal (and XMLHttpRequest in
 * browsers, for upload progress).
 *
 * ```ts
 * import { Sessionbox } from "@sessionbox/sdk";
 * const sb = new Sessionbox({ baseUrl: "http://127.0.0.1:8080", apiKey: "sbx_..." });
 * for await (const line of sb.executeStream("chat-42", { code: "print('hi')" })) console.log(line);
 * ```
 */
export { Sessionbox } from "./client.js";
export type { ListFilesOptions, ListSessionsOptions, SessionboxOptions, SubmitRunOptions, WaitForRunOptions } from "./client.js";
export { SessionboxError, parseRetryAfter } from "./errors.js";
export type { ProblemType, SessionboxErrorInit } from "./errors.js";
export type { CallOptions } from "./http.js";
export { readLines, readNDJSON } from "./ndjson.js";
export type { RetryEvent, RetryOptions } from "./retry.js";
export type { UploadData, UploadOptions, UploadProgress } from "./upload.js";
export type * from "./types.js";
