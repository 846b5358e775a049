"""Every operation of the API, once for both clients.

Each method builds its request and hands it to the client's plumbing
(``_json``, ``_none``, ``_bytes``, ``_stream``, ``_collect``): on Sessionbox
they return values and iterators, on AsyncSessionbox awaitables and async
iterators. What needs more than one request (files of any size, waiting for a
run, paging) is written in each client."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from ._core import Execution, Model, Req, body, seg, sid


class _Api:
    _json: Callable[..., Any]
    _none: Callable[..., Any]
    _bytes: Callable[..., Any]
    _stream: Callable[..., Any]
    _collect: Callable[..., Any]

    # Sessions.

    def start(self, session_id: str, **fields: Any) -> Any:
        """Starts the sandbox (or resumes it, or returns the running one): type, template, envs, metadata, idle_timeout_secs, pause, persist."""
        return self._json(Req("POST", f"{sid(session_id)}/sandbox/start", json=body(**fields)))

    def stop(self, session_id: str) -> Any:
        """Stops the sandbox; the session and its checkpointed files stay."""
        return self._json(Req("POST", f"{sid(session_id)}/sandbox/stop"))

    def status(self, session_id: str) -> Any:
        """The session's state and deadlines."""
        return self._json(Req("GET", f"{sid(session_id)}/sandbox", idempotent=True))

    def metrics(self, session_id: str) -> Any:
        """The sandbox's resource use now and over the last 5 minutes."""
        return self._json(Req("GET", f"{sid(session_id)}/sandbox/metrics", idempotent=True))

    def reset(self, session_id: str) -> Any:
        """Restarts the kernel: variables go, files stay."""
        return self._none(Req("POST", f"{sid(session_id)}/reset"))

    def checkpoint(self, session_id: str) -> Any:
        """Saves /home/user to the session's workspace now."""
        return self._json(Req("POST", f"{sid(session_id)}/checkpoint"))

    def delete_session(self, session_id: str) -> Any:
        """Deletes the session, its sandbox and its workspace."""
        return self._none(Req("DELETE", sid(session_id), idempotent=True))

    def list_sessions(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> Any:
        """One page of sessions; pass next_cursor back as cursor."""
        return self._json(Req("GET", "/v1/sessions", params={"limit": limit, "cursor": cursor}, idempotent=True))

    # Code.

    def execute(
        self,
        session_id: str,
        code: str,
        *,
        on_stdout: Optional[Callable[[str], Any]] = None,
        on_stderr: Optional[Callable[[str], Any]] = None,
        on_result: Optional[Callable[[Model], Any]] = None,
        on_error: Optional[Callable[[Model], Any]] = None,
        **fields: Any,
    ) -> Any:
        """Runs Python in the session's kernel (timeout_secs, envs, context) and returns the whole result.

        With callbacks the output reaches them as it happens, through the
        stream, and the same result comes back at the end. An exception in the
        code is a result (``error``), not a raised error. Never retried."""
        cbs = dict(on_stdout=on_stdout, on_stderr=on_stderr, on_result=on_result, on_error=on_error)
        if any(cbs.values()):
            return self._collect(self.execute_stream(session_id, code, **fields), cbs)
        return self._json(Req("POST", f"{sid(session_id)}/execute", json=body(code=code, **fields)), Execution)

    def execute_stream(self, session_id: str, code: str, **fields: Any) -> Any:
        """Runs Python and yields its lines as they happen: start, stdout, stderr, result, error, keepalive, done.

        A failure (before or during the stream) raises; so does a stream cut before done."""
        return self._stream(Req("POST", f"{sid(session_id)}/execute/stream", json=body(code=code, **fields)))

    def execute_once(self, code: str, *, on_stdout: Any = None, on_stderr: Any = None, on_result: Any = None, on_error: Any = None, **fields: Any) -> Any:
        """Runs Python once in a sandbox of its own (timeout_secs, envs, template), killed afterwards."""
        cbs = dict(on_stdout=on_stdout, on_stderr=on_stderr, on_result=on_result, on_error=on_error)
        if any(cbs.values()):
            return self._collect(self.execute_once_stream(code, **fields), cbs)
        return self._json(Req("POST", "/v1/execute", json=body(code=code, **fields)), Execution)

    def execute_once_stream(self, code: str, **fields: Any) -> Any:
        """execute_once with live output, as execute_stream."""
        return self._stream(Req("POST", "/v1/execute/stream", json=body(code=code, **fields)))

    def install(self, session_id: str, packages: list, **fields: Any) -> Any:
        """Installs packages with pip (index_url)."""
        return self._json(Req("POST", f"{sid(session_id)}/install", json=body(packages=packages, **fields)))

    def install_stream(self, session_id: str, packages: list, **fields: Any) -> Any:
        """install with pip's output as it happens."""
        return self._stream(Req("POST", f"{sid(session_id)}/install/stream", json=body(packages=packages, **fields)))

    # Runs.

    def submit_run(self, session_id: str, code: str, *, idempotency_key: Optional[str] = None, **fields: Any) -> Any:
        """Queues code to run; with an idempotency key the same key returns the same run, and 429/503 are retried."""
        h = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        req = Req("POST", f"{sid(session_id)}/runs", json=body(code=code, **fields), idempotent=bool(idempotency_key), headers=h)
        return self._json(req)

    def get_run(self, run_id: str) -> Any:
        """A run's status and, once finished, its result."""
        return self._json(Req("GET", f"/v1/runs/{seg(run_id)}", idempotent=True))

    # Files.

    def list_files(self, session_id: str, path: Optional[str] = None, depth: Optional[int] = None) -> Any:
        """Lists a directory (default /home/user), depth 1 to 10."""
        return self._json(Req("GET", f"{sid(session_id)}/files", params={"path": path, "depth": depth}, idempotent=True))

    def read_file(self, session_id: str, path: str) -> Any:
        """A file's bytes up to the inline limit (4.5 MB by default; TooLargeError beyond): download_file reads any size."""
        return self._bytes(Req("GET", f"{sid(session_id)}/files/content", params={"path": path}, accept="*/*", idempotent=True))

    def write_file(self, session_id: str, path: str, data: Union[bytes, str]) -> Any:
        """Writes a file in one request, up to the inline limit: upload_file writes any size."""
        content = data.encode() if isinstance(data, str) else bytes(data)
        return self._json(Req("PUT", f"{sid(session_id)}/files/content", params={"path": path}, content=content, idempotent=True))

    def delete_file(self, session_id: str, path: str) -> Any:
        """Removes a file, or a directory with everything in it."""
        return self._none(Req("DELETE", f"{sid(session_id)}/files", params={"path": path}, idempotent=True))

    def download_url(self, session_id: str, path: str) -> Any:
        """A presigned URL serving the file without credentials until expiresAt."""
        return self._json(Req("POST", f"{sid(session_id)}/files/download-url", json={"path": path}))

    def upload_urls(self, session_id: str, urls: list, **fields: Any) -> Any:
        """Has the service fetch URLs into the sandbox (dest_dir)."""
        return self._json(Req("POST", f"{sid(session_id)}/files/upload-urls", json=body(urls=urls, **fields)))

    # Commands.

    def run_command(self, session_id: str, cmd: str, *, on_stdout: Any = None, on_stderr: Any = None, **fields: Any) -> Any:
        """Runs a shell command (cwd, envs, timeout_secs, user) to its end; callbacks stream its output. A non-zero exit is a result."""
        if on_stdout or on_stderr:
            return self._collect(self.run_command_stream(session_id, cmd, **fields), dict(on_stdout=on_stdout, on_stderr=on_stderr), command=True)
        return self._json(Req("POST", f"{sid(session_id)}/commands", json=body(cmd=cmd, background=False, **fields)))

    def run_command_stream(self, session_id: str, cmd: str, **fields: Any) -> Any:
        """run_command with its lines as they happen; done carries the summary."""
        return self._stream(Req("POST", f"{sid(session_id)}/commands", json=body(cmd=cmd, background=False, **fields)))

    def start_command(self, session_id: str, cmd: str, **fields: Any) -> Any:
        """Starts a command in the background and returns its id at once."""
        return self._json(Req("POST", f"{sid(session_id)}/commands", json=body(cmd=cmd, background=True, **fields)))

    def list_commands(self, session_id: str) -> Any:
        """The background commands running."""
        return self._json(Req("GET", f"{sid(session_id)}/commands", idempotent=True))

    def get_command(self, session_id: str, command_id: str) -> Any:
        """A background command's status, and its result once ended. Not retried: output is delivered once."""
        return self._json(Req("GET", f"{sid(session_id)}/commands/{seg(command_id)}"))

    def attach_command(self, session_id: str, command_id: str) -> Any:
        """Reattaches to a background command: the output nobody read, live output, then done."""
        return self._stream(Req("GET", f"{sid(session_id)}/commands/{seg(command_id)}"))

    def read_command_output(self, session_id: str, command_id: str, wait_secs: Optional[int] = None) -> Any:
        """What a background command printed since the last read (by any caller), waiting up to
        wait_secs (0-60, default 0) for its end, and whether it still runs or its exit_code (-1 when a
        signal ended it). The output is kept in the sandbox (stdout_path, stderr_path), so a read loses
        nothing; more says output beyond one read's limit waits for the next. Read until running and
        more are both false to get every line once. Not retried: a read moves the read position."""
        return self._json(Req("GET", f"{sid(session_id)}/commands/{seg(command_id)}/output", params={"waitSecs": wait_secs}))

    def kill_command(self, session_id: str, command_id: str) -> Any:
        """Kills a background command's process group."""
        return self._none(Req("POST", f"{sid(session_id)}/commands/{seg(command_id)}/kill"))

    # Contexts.

    def create_context(self, session_id: str, **fields: Any) -> Any:
        """A kernel context of its own (language, cwd); pass its contextId as execute's context."""
        return self._json(Req("POST", f"{sid(session_id)}/contexts", json=body(**fields)))

    def list_contexts(self, session_id: str) -> Any:
        return self._json(Req("GET", f"{sid(session_id)}/contexts", idempotent=True))

    def reset_context(self, session_id: str, context_id: str) -> Any:
        return self._none(Req("POST", f"{sid(session_id)}/contexts/{seg(context_id)}/reset"))

    def delete_context(self, session_id: str, context_id: str) -> Any:
        return self._none(Req("DELETE", f"{sid(session_id)}/contexts/{seg(context_id)}", idempotent=True))
