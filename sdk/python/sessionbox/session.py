"""Session handles: a client's session calls without the id, with files,
commands and contexts grouped as E2B's Sandbox groups them.

One class serves both clients: each method returns what the client's method
returns, a value for Sessionbox, an awaitable or async iterator for
AsyncSessionbox."""

from __future__ import annotations

from typing import Any, Optional


class Session:
    """A session of a Sessionbox (or, as AsyncSession, of an AsyncSessionbox).

    ``with client.create_session() as s:`` deletes the session at the end."""

    def __init__(self, client: Any, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.files = Files(client, session_id)
        self.commands = Commands(client, session_id)
        self.contexts = Contexts(client, session_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_id!r})"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.client.delete_session(self.session_id)

    def start(self, **fields: Any) -> Any:
        return self.client.start(self.session_id, **fields)

    def stop(self) -> Any:
        return self.client.stop(self.session_id)

    def status(self) -> Any:
        return self.client.status(self.session_id)

    def metrics(self) -> Any:
        return self.client.metrics(self.session_id)

    def reset(self) -> Any:
        return self.client.reset(self.session_id)

    def checkpoint(self) -> Any:
        return self.client.checkpoint(self.session_id)

    def delete(self) -> Any:
        return self.client.delete_session(self.session_id)

    def execute(self, code: str, **kw: Any) -> Any:
        """Runs Python; on_stdout, on_stderr, on_result, on_error stream its output. See Sessionbox.execute."""
        return self.client.execute(self.session_id, code, **kw)

    def execute_stream(self, code: str, **kw: Any) -> Any:
        return self.client.execute_stream(self.session_id, code, **kw)

    def install(self, packages: list, **kw: Any) -> Any:
        return self.client.install(self.session_id, packages, **kw)

    def install_stream(self, packages: list, **kw: Any) -> Any:
        return self.client.install_stream(self.session_id, packages, **kw)

    def submit_run(self, code: str, **kw: Any) -> Any:
        return self.client.submit_run(self.session_id, code, **kw)


class AsyncSession(Session):
    """A session of an AsyncSessionbox: ``async with await client.create_session() as s:``."""

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.delete_session(self.session_id)


class _Part:
    def __init__(self, client: Any, session_id: str) -> None:
        self._c = client
        self._id = session_id


class Files(_Part):
    """A session's files; relative paths resolve in /home/user."""

    def list(self, path: Any = None, depth: Any = None) -> Any:
        return self._c.list_files(self._id, path, depth)

    def read(self, path: str) -> Any:
        """A file of any size, as bytes."""
        return self._c.download_file(self._id, path)

    def read_text(self, path: str, encoding: str = "utf-8") -> Any:
        """A file of any size, as text."""
        r = self._c.download_file(self._id, path)
        if hasattr(r, "__await__"):
            return _decode(r, encoding)
        return r.decode(encoding)

    def iter(self, path: str, chunk_size: int = 256 * 1024) -> Any:
        """A file of any size as chunks of bytes as they arrive."""
        return self._c.iter_file(self._id, path, chunk_size)

    def download(self, path: str, dest: Any) -> Any:
        """Writes a file of any size to dest (a path or a binary file); returns the byte count."""
        return self._c.download_file(self._id, path, dest)

    def write(self, path: str, data: Any, **kw: Any) -> Any:
        """Writes a file of any size (bytes, str, a path, a binary file); see upload_file."""
        return self._c.upload_file(self._id, path, data, **kw)

    def remove(self, path: str) -> Any:
        return self._c.delete_file(self._id, path)

    def download_url(self, path: str) -> Any:
        return self._c.download_url(self._id, path)

    def upload_urls(self, urls: list, **kw: Any) -> Any:
        return self._c.upload_urls(self._id, urls, **kw)


async def _decode(r: Any, encoding: str) -> str:
    return (await r).decode(encoding)


class Commands(_Part):
    """A session's shell commands (``bash -l -c``)."""

    def run(self, cmd: str, **kw: Any) -> Any:
        """Runs to the end; on_stdout/on_stderr stream the output. A non-zero exit is a result."""
        return self._c.run_command(self._id, cmd, **kw)

    def stream(self, cmd: str, **kw: Any) -> Any:
        return self._c.run_command_stream(self._id, cmd, **kw)

    def start(self, cmd: str, **kw: Any) -> Any:
        return self._c.start_command(self._id, cmd, **kw)

    def list(self) -> Any:
        return self._c.list_commands(self._id)

    def get(self, command_id: str) -> Any:
        return self._c.get_command(self._id, command_id)

    def attach(self, command_id: str) -> Any:
        return self._c.attach_command(self._id, command_id)

    def read_output(self, command_id: str, wait_secs: Optional[int] = None) -> Any:
        """The output since the last read, waiting up to wait_secs for the end; see read_command_output."""
        return self._c.read_command_output(self._id, command_id, wait_secs=wait_secs)

    def kill(self, command_id: str) -> Any:
        return self._c.kill_command(self._id, command_id)


class Contexts(_Part):
    """A session's kernel contexts: variables and working directory of their own."""

    def create(self, **kw: Any) -> Any:
        return self._c.create_context(self._id, **kw)

    def list(self) -> Any:
        return self._c.list_contexts(self._id)

    def reset(self, context_id: str) -> Any:
        return self._c.reset_context(self._id, context_id)

    def delete(self, context_id: str) -> Any:
        return self._c.delete_context(self._id, context_id)
