// Names for the document's schemas. The shapes come from src/generated/openapi.ts,
// which `npm run generate` writes from pkg/api/openapi.json; only the names are
// kept here, so the SDK follows the document when it changes.
import type { components, operations, paths } from "./generated/openapi.js";

export type { components, operations, paths };

type Schemas = components["schemas"];

/** RFC 9457 problem details: every error the API answers with. */
export type Problem = Schemas["Problem"];
/** A session and its sandbox. */
export type Session = Schemas["Session"];
/** A page of sessions. */
export type SessionList = Schemas["SessionList"];
/** The optional body of start. */
export type StartRequest = Schemas["StartRequest"];
/** The body of execute. */
export type ExecuteRequest = Schemas["ExecuteRequest"];
/** The body of the one-shot execute (no session). */
export type ExecuteOnceRequest = Schemas["ExecuteOnceRequest"];
/** An execution's whole result. */
export type ExecutionResult = Schemas["ExecutionResult"];
/** A rich output (text, html, png, chart...). */
export type Result = Schemas["Result"];
/** An exception the code raised. */
export type ExecError = Schemas["ExecError"];
/** The body of install. */
export type InstallRequest = Schemas["InstallRequest"];
/** An install's result. */
export type InstallResult = Schemas["InstallResult"];
/** An execution's outcome without its output: what a stream's done line carries. */
export type ExecutionSummary = Schemas["ExecutionSummary"];
/** An install's outcome without pip's output: what a stream's done line carries. */
export type InstallSummary = Schemas["InstallSummary"];
/** A line of an execute's application/x-ndjson stream, as the document declares it. */
export type ExecuteStreamLine = Schemas["ExecuteStreamLine"];
/** A line of an install's application/x-ndjson stream, as the document declares it. */
export type InstallStreamLine = Schemas["InstallStreamLine"];
/** Any line of an application/x-ndjson stream. */
export type StreamLine = ExecuteStreamLine | InstallStreamLine | CommandStreamLine;
/** The last line of a call that failed midway; the SDK throws it as a SessionboxError. */
export type FailureLine = Schemas["FailureLine"];
/** The lines executeStream and executeOnceStream yield: all but the failure line, which they throw. */
export type ExecuteOutputLine = Exclude<ExecuteStreamLine, FailureLine>;
/** The lines installStream yields: all but the failure line, which it throws. */
export type InstallOutputLine = Exclude<InstallStreamLine, FailureLine>;
/** A line of a shell command's stream. */
export type CommandStreamLine = Schemas["CommandStreamLine"];
/** The lines runCommandStream and attachCommand yield: all but the failure line, which they throw. */
export type CommandOutputLine = Exclude<CommandStreamLine, FailureLine>;
/** One read of a background command's output: what it printed since the last read, and whether it still runs. */
export type CommandOutput = Schemas["CommandOutput"];
/** A command's outcome without its output, as a command stream's done line carries it. */
export type CommandSummary = Schemas["CommandSummary"];
/** Any line a stream method yields. */
export type OutputLine = ExecuteOutputLine | InstallOutputLine | CommandOutputLine;
/** One entry of a directory listing, or the file a write produced. */
export type FileEntry = Schemas["FileEntry"];
/** A directory listing. */
export type FileList = Schemas["FileList"];
/** A presigned upload: where to PUT the bytes and the id to import them by. */
export type UploadTicket = Schemas["UploadTicket"];
/** A presigned download of a sandbox file. */
export type DownloadTicket = Schemas["DownloadTicket"];
/** The body of an asynchronous run. */
export type RunRequest = Schemas["RunRequest"];
/** The answer to a submitted run. */
export type RunAccepted = Schemas["RunAccepted"];
/** An asynchronous run and, once finished, its result. */
export type Run = Schemas["Run"];
/** The body of uploads from URLs. */
export type UploadUrlsRequest = Schemas["UploadUrlsRequest"];
/** What landed of an upload from URLs, and what did not. */
export type UploadUrlsResult = Schemas["UploadUrlsResult"];
/** One checkpoint of a session's workspace. */
export type CheckpointInfo = Schemas["CheckpointInfo"];
/** The body of createContext. */
export type ContextRequest = Schemas["ContextRequest"];
/** A kernel context of a session: pass its contextId as `context` to execute. */
export type CodeContext = Schemas["CodeContext"];
/** A session's contexts. */
export type ContextList = Schemas["ContextList"];
/** The newest sample of a sandbox's resource use, with the samples of the last 5 minutes. */
export type SandboxMetrics = Schemas["SandboxMetrics"];
/** One sample of a sandbox's resource use. */
export type SandboxMetric = Schemas["SandboxMetric"];
/** The body of runCommand and startCommand. */
export type CommandRequest = Schemas["CommandRequest"];
/** How a command ended: a non-zero exit or a timeout is a result, not an error. */
export type CommandResult = Schemas["CommandResult"];
/** A background command just started. */
export type CommandStarted = Schemas["CommandStarted"];
/** A background command: running, or ended with its result. */
export type CommandInfo = Schemas["CommandInfo"];
/** The background commands of a session. */
export type CommandList = Schemas["CommandList"];
