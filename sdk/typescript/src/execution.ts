import type {
  CommandOutputLine,
  CommandResult,
  ExecError,
  ExecuteOutputLine,
  ExecutionResult,
  Result,
} from "./types.js";

/** A callback may return a promise: the stream waits for it, so output is handled in order. */
type Callback<T> = (value: T) => void | Promise<void>;

/** Live output of an execute, as it happens. Any of them turns the call into a stream. */
export interface ExecuteCallbacks {
  /** A chunk of standard output. */
  onStdout?: Callback<string>;
  /** A chunk of standard error. */
  onStderr?: Callback<string>;
  /** A rich result: a display (a chart's PNG, a DataFrame's HTML) or the last expression's value. */
  onResult?: Callback<Result>;
  /** The exception the code raised (a Python error, a timeout's TimeoutError): a result, not a thrown error. */
  onError?: Callback<ExecError>;
}

/** Live output of a shell command. */
export interface CommandCallbacks {
  onStdout?: Callback<string>;
  onStderr?: Callback<string>;
}

/** An execution's result with `text`, the last expression's value as text (E2B's `execution.text`). */
export interface Execution extends ExecutionResult {
  /** The main result's text (the value of the last expression), or undefined when there was none. */
  readonly text: string | undefined;
}

/** Whether the options ask for live output. */
export function wantsLive(cb: ExecuteCallbacks | undefined): boolean {
  return !!(cb && (cb.onStdout || cb.onStderr || cb.onResult || cb.onError));
}

/**
 * Adds the `text` accessor. It is a getter that JSON.stringify skips, so the
 * object serialises as the API sent it.
 */
export function withText(r: ExecutionResult): Execution {
  if (!("text" in r)) {
    Object.defineProperty(r, "text", {
      get(this: ExecutionResult) {
        return this.results?.find((x) => x.isMainResult)?.text;
      },
      enumerable: false,
    });
  }
  return r as Execution;
}

/**
 * Drives an execute stream through the callbacks and rebuilds the whole
 * result from its lines: the done line carries the outcome, the lines before
 * it the output.
 */
export async function collectExecution(lines: AsyncIterable<ExecuteOutputLine>, cb: ExecuteCallbacks): Promise<Execution> {
  const out: string[] = [];
  const err: string[] = [];
  const results: Result[] = [];
  let error: ExecError | undefined;
  for await (const l of lines) {
    switch (l.type) {
      case "stdout":
        out.push(l.text);
        await cb.onStdout?.(l.text);
        break;
      case "stderr":
        err.push(l.text);
        await cb.onStderr?.(l.text);
        break;
      case "result":
        results.push(l.result);
        await cb.onResult?.(l.result);
        break;
      case "error":
        error = l.error;
        await cb.onError?.(l.error);
        break;
      case "done":
        return withText({ ...l.summary, stdout: out.join(""), stderr: err.join(""), results, ...(error ? { error } : {}) });
    }
  }
  // The transport throws on a stream cut before done; this is not reached.
  throw new Error("sessionbox: the stream ended without its done line");
}

/** As collectExecution, for a shell command's stream. */
export async function collectCommand(lines: AsyncIterable<CommandOutputLine>, cb: CommandCallbacks): Promise<CommandResult> {
  const out: string[] = [];
  const err: string[] = [];
  let error: ExecError | undefined;
  for await (const l of lines) {
    switch (l.type) {
      case "stdout":
        out.push(l.text);
        await cb.onStdout?.(l.text);
        break;
      case "stderr":
        err.push(l.text);
        await cb.onStderr?.(l.text);
        break;
      case "error":
        error = l.error;
        break;
      case "done":
        return { ...l.summary, stdout: out.join(""), stderr: err.join(""), ...(error ? { error } : {}) };
    }
  }
  throw new Error("sessionbox: the stream ended without its done line");
}
