import type { DownloadFormats, DownloadOptions, ExecuteOptions, ListFilesOptions, ReadCommandOutputOptions, RunCommandOptions, SessionboxOptions, SubmitRunOptions } from "./client.js";
import { Sessionbox } from "./client.js";
import type { Execution } from "./execution.js";
import type { CallOptions } from "./http.js";
import type {
  CheckpointInfo,
  CodeContext,
  CommandInfo,
  CommandList,
  CommandOutput,
  CommandOutputLine,
  CommandRequest,
  CommandResult,
  CommandStarted,
  ContextList,
  ContextRequest,
  DownloadTicket,
  ExecuteOutputLine,
  ExecuteRequest,
  FileEntry,
  FileList,
  InstallOutputLine,
  InstallRequest,
  InstallResult,
  RunAccepted,
  RunRequest,
  SandboxMetrics,
  Session,
  StartRequest,
  UploadUrlsRequest,
  UploadUrlsResult,
} from "./types.js";
import type { UploadData, UploadOptions } from "./upload.js";

/** Options of SessionHandle.create: how to connect, the session's id, and how to start it. */
export interface CreateSessionOptions extends SessionboxOptions, StartRequest {
  /** The session's id; a fresh one when left out. */
  sessionId?: string;
  /** A client to use instead of one made from the connection options. */
  client?: Sessionbox;
}

/** Code: a string is the code itself, an object the whole request. */
type Code = string | ExecuteRequest;
const asExecute = (c: Code): ExecuteRequest => (typeof c === "string" ? { code: c } : c);
type Cmd = string | Omit<CommandRequest, "background">;
const asCommand = (c: Cmd): Omit<CommandRequest, "background"> => (typeof c === "string" ? { cmd: c } : c);

/**
 * One session: every session call of Sessionbox without the id, and files,
 * commands and contexts grouped as E2B's Sandbox groups them. Get one with
 * `client.session(id)` (sends nothing) or `await SessionHandle.create()`
 * (starts the sandbox).
 */
export class SessionHandle {
  /** The session's files in /home/user (relative paths resolve there). */
  readonly files: SessionFiles;
  /** Shell commands in the session's sandbox. */
  readonly commands: SessionCommands;
  /** Kernel contexts of their own beside the default one. */
  readonly contexts: SessionContexts;

  constructor(readonly client: Sessionbox, readonly sessionId: string) {
    this.files = new SessionFiles(client, sessionId);
    this.commands = new SessionCommands(client, sessionId);
    this.contexts = new SessionContexts(client, sessionId);
  }

  /** Starts a session (connection from the options or SESSIONBOX_URL/SESSIONBOX_API_KEY) and returns its handle. */
  static async create(options: CreateSessionOptions = {}): Promise<SessionHandle> {
    const { sessionId, client, baseUrl, apiKey, headers, fetch, retry, ...start } = options;
    const sb = client ?? new Sessionbox({ baseUrl, apiKey, headers, fetch, retry });
    return sb.createSession({ ...start, sessionId }, {});
  }

  /** Starts the sandbox (or resumes it, or returns the running one). */
  start(req: StartRequest = {}, options?: CallOptions): Promise<Session> {
    return this.client.start(this.sessionId, req, options);
  }
  /** Stops the sandbox; the session and its checkpointed files stay. */
  stop(options?: CallOptions): Promise<Session> {
    return this.client.stop(this.sessionId, options);
  }
  /** The session's state and deadlines. */
  status(options?: CallOptions): Promise<Session> {
    return this.client.status(this.sessionId, options);
  }
  /** The sandbox's resource use. */
  metrics(options?: CallOptions): Promise<SandboxMetrics> {
    return this.client.metrics(this.sessionId, options);
  }
  /** Restarts the kernel: variables go, files stay. */
  reset(options?: CallOptions): Promise<void> {
    return this.client.reset(this.sessionId, options);
  }
  /** Saves /home/user to the session's workspace now. */
  checkpoint(options?: CallOptions): Promise<CheckpointInfo> {
    return this.client.checkpoint(this.sessionId, options);
  }
  /** Deletes the session, its sandbox and its workspace. */
  delete(options?: CallOptions): Promise<void> {
    return this.client.deleteSession(this.sessionId, options);
  }
  /** Runs Python (the code, or a whole request); callbacks stream its output. See Sessionbox.execute. */
  execute(code: Code, options?: ExecuteOptions): Promise<Execution> {
    return this.client.execute(this.sessionId, asExecute(code), options);
  }
  /** Runs Python and yields its output lines as they happen. See Sessionbox.executeStream. */
  executeStream(code: Code, options?: CallOptions): AsyncGenerator<ExecuteOutputLine, void, undefined> {
    return this.client.executeStream(this.sessionId, asExecute(code), options);
  }
  /** Installs packages with pip. */
  install(packages: string[] | InstallRequest, options?: CallOptions): Promise<InstallResult> {
    return this.client.install(this.sessionId, Array.isArray(packages) ? { packages } : packages, options);
  }
  /** Installs packages and yields pip's output as it happens. */
  installStream(packages: string[] | InstallRequest, options?: CallOptions): AsyncGenerator<InstallOutputLine, void, undefined> {
    return this.client.installStream(this.sessionId, Array.isArray(packages) ? { packages } : packages, options);
  }
  /** Queues code to run; wait for it with client.waitForRun. */
  submitRun(req: RunRequest, options?: SubmitRunOptions): Promise<RunAccepted> {
    return this.client.submitRun(this.sessionId, req, options);
  }
}

/** A session's files. */
export class SessionFiles {
  constructor(private readonly client: Sessionbox, private readonly sessionId: string) {}

  /** Lists a directory (default /home/user). */
  list(path?: string, options: Omit<ListFilesOptions, "path"> = {}): Promise<FileList> {
    return this.client.listFiles(this.sessionId, { ...options, path });
  }
  /** A file of any size: bytes by default, or text, a Blob, a stream. */
  read(path: string, options?: DownloadOptions<"bytes">): Promise<Uint8Array>;
  read<F extends keyof DownloadFormats>(path: string, options: DownloadOptions<F> & { format: F }): Promise<DownloadFormats[F]>;
  read(path: string, options: DownloadOptions<keyof DownloadFormats> = {}): Promise<DownloadFormats[keyof DownloadFormats]> {
    return this.client.downloadFile(this.sessionId, path, options as DownloadOptions<"bytes">);
  }
  /** A file's text (UTF-8), of any size. */
  readText(path: string, options?: CallOptions): Promise<string> {
    return this.client.downloadFile(this.sessionId, path, { ...options, format: "text" });
  }
  /** A file as a stream of any size. */
  readStream(path: string, options?: CallOptions): Promise<ReadableStream<Uint8Array>> {
    return this.client.readFileStream(this.sessionId, path, options);
  }
  /** Writes a file of any size (a string as UTF-8); see Sessionbox.uploadFile. */
  write(path: string, data: string | UploadData, options?: UploadOptions): Promise<FileEntry> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.client.uploadFile(this.sessionId, path, bytes, options);
  }
  /** Removes a file, or a directory with everything in it. */
  remove(path: string, options?: CallOptions): Promise<void> {
    return this.client.deleteFile(this.sessionId, path, options);
  }
  /** A presigned URL serving the file without credentials. */
  downloadUrl(path: string, options?: CallOptions): Promise<DownloadTicket> {
    return this.client.downloadUrl(this.sessionId, path, options);
  }
  /** Has the service fetch URLs into the sandbox. */
  uploadUrls(req: UploadUrlsRequest, options?: CallOptions): Promise<UploadUrlsResult> {
    return this.client.uploadUrls(this.sessionId, req, options);
  }
}

/** A session's shell commands. */
export class SessionCommands {
  constructor(private readonly client: Sessionbox, private readonly sessionId: string) {}

  /** Runs a command to its end; onStdout/onStderr stream its output. A non-zero exit is a result. */
  run(cmd: Cmd, options?: RunCommandOptions): Promise<CommandResult> {
    return this.client.runCommand(this.sessionId, asCommand(cmd), options);
  }
  /** Runs a command and yields its output lines as they happen. */
  stream(cmd: Cmd, options?: CallOptions): AsyncGenerator<CommandOutputLine, void, undefined> {
    return this.client.runCommandStream(this.sessionId, asCommand(cmd), options);
  }
  /** Starts a command in the background and returns its id at once. */
  start(cmd: Cmd, options?: CallOptions): Promise<CommandStarted> {
    return this.client.startCommand(this.sessionId, asCommand(cmd), options);
  }
  /** The background commands. */
  list(options?: CallOptions): Promise<CommandList> {
    return this.client.listCommands(this.sessionId, options);
  }
  /** A background command's status, and its result once ended. */
  get(commandId: string, options?: CallOptions): Promise<CommandInfo> {
    return this.client.getCommand(this.sessionId, commandId, options);
  }
  /** Reattaches to a background command's output. */
  attach(commandId: string, options?: CallOptions): AsyncGenerator<CommandOutputLine, void, undefined> {
    return this.client.attachCommand(this.sessionId, commandId, options);
  }
  /** A background command's output since the last read, waiting up to `waitSecs` for its end; see Sessionbox.readCommandOutput. */
  readOutput(commandId: string, options?: ReadCommandOutputOptions): Promise<CommandOutput> {
    return this.client.readCommandOutput(this.sessionId, commandId, options);
  }
  /** Kills a background command. */
  kill(commandId: string, options?: CallOptions): Promise<void> {
    return this.client.killCommand(this.sessionId, commandId, options);
  }
}

/** A session's kernel contexts. */
export class SessionContexts {
  constructor(private readonly client: Sessionbox, private readonly sessionId: string) {}

  /** Creates a context; pass its contextId as execute's `context`. */
  create(req: ContextRequest = {}, options?: CallOptions): Promise<CodeContext> {
    return this.client.createContext(this.sessionId, req, options);
  }
  /** The session's contexts. */
  list(options?: CallOptions): Promise<ContextList> {
    return this.client.listContexts(this.sessionId, options);
  }
  /** Restarts a context's kernel. */
  reset(contextId: string, options?: CallOptions): Promise<void> {
    return this.client.resetContext(this.sessionId, contextId, options);
  }
  /** Removes a context. */
  delete(contextId: string, options?: CallOptions): Promise<void> {
    return this.client.deleteContext(this.sessionId, contextId, options);
  }
}
