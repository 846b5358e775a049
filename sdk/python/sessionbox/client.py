"""The synchronous client."""

from __future__ import annotations

import itertools
import os
import time
from typing import IO, Any, Callable, Iterator, Mapping, Optional, Union

import httpx

from . import _core as c
from ._core import Model, Req, body, sid
from ._api import _Api
from .errors import from_answer
from .session import Session

UploadData = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]


class Sessionbox(_Api):
    """A client of the sessionbox API.

    ``base_url`` and ``api_key`` default to $SESSIONBOX_URL and
    $SESSIONBOX_API_KEY. Failures are ``SessionboxError`` subclasses, one per
    problem type; a request that never got an answer raises httpx's own
    error. Idempotent calls (GET, PUT, DELETE, and runs with an idempotency
    key) are retried on 429 and 503 after Retry-After; executions, installs
    and other POSTs never are. Use it as a context manager, or call close().
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        headers: Optional[Mapping[str, str]] = None,
        max_retries: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        timeout: Any = None,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self._cfg = c.make_config(base_url, api_key, headers, max_retries, base_delay, max_delay, timeout)
        self._http = httpx.Client(
            base_url=self._cfg.base_url, headers=c.client_headers(self._cfg), timeout=self._cfg.timeout, transport=transport
        )
        # Presigned URLs carry their own authority: the key never goes to storage.
        self._storage = httpx.Client(timeout=self._cfg.timeout, transport=transport)

    def close(self) -> None:
        self._http.close()
        self._storage.close()

    def __enter__(self) -> "Sessionbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # Plumbing.

    def _send(self, req: Req) -> httpx.Response:
        """The successful response, open for streaming; raises the answer's error."""
        for attempt in itertools.count(1):
            try:
                res = self._http.send(req.build(self._http), stream=True)
            except c.NOT_SENT:
                # The server never got the request: sending it again is safe.
                pause = c.backoff(attempt, self._cfg)
                if pause is None:
                    raise
                time.sleep(pause)
                continue
            if res.is_success:
                return res
            try:
                raw = res.read()
            finally:
                res.close()
            wait = c.retry_wait(req, res, attempt, self._cfg)
            if wait is None:
                raise from_answer(res.status_code, res.reason_phrase, res.headers, raw)
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _json(self, req: Req, cls: type = Model) -> Any:
        res = self._send(req)
        try:
            res.read()
            return c.result_or_raise(res.json(), cls)
        finally:
            res.close()

    def _none(self, req: Req) -> None:
        self._send(req).close()

    def _bytes(self, req: Req) -> bytes:
        res = self._send(req)
        try:
            return res.read()
        finally:
            res.close()

    def _stream(self, req: Req) -> Iterator[Model]:
        req.accept = "application/x-ndjson"
        res = self._send(req)
        try:
            for raw in res.iter_lines():
                line = c.stream_line(raw)
                if line is None:
                    continue
                yield line
                if line["type"] == "done":
                    return
            raise c.incomplete(res)
        finally:
            res.close()

    def _collect(self, lines: Iterator[Model], cbs: c.Callbacks, command: bool = False) -> Any:
        col = c.Collector()
        for line in lines:
            if line["type"] == "done":
                return col.command(line["summary"]) if command else col.execution(line["summary"])
            name, arg = col.take(line)
            cb = cbs.get(name) if name else None
            if cb:
                cb(arg)
        raise AssertionError("unreachable: the stream raises when cut")

    # Sessions, runs and files: more than one request each.

    def session(self, session_id: str) -> Session:
        """A handle on a session: the same calls without the id. Sends nothing; the first call that needs the sandbox starts it."""
        return Session(self, session_id)

    def create_session(self, session_id: Optional[str] = None, **start: Any) -> Session:
        """Starts a session (a fresh id unless given) and returns its handle; keywords as for start."""
        s = self.session(session_id or c.new_session_id())
        self.start(s.session_id, **start)
        return s

    def sessions(self, limit: Optional[int] = None) -> Iterator[Model]:
        """Every session, page after page."""
        cursor = None
        while True:
            page = self.list_sessions(limit, cursor)
            yield from page["sessions"]
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def wait_for_run(self, run_id: str, interval: float = 0.5) -> Model:
        """Polls a run until it has succeeded or failed."""
        while True:
            run = self.get_run(run_id)
            if run["status"] in ("succeeded", "failed"):
                return run
            time.sleep(interval)

    def upload_file(
        self,
        session_id: str,
        path: str,
        data: UploadData,
        *,
        size: Optional[int] = None,
        content_type: Optional[str] = None,
        on_progress: Optional[Callable[[int, int], Any]] = None,
        inline_limit: int = c.INLINE_LIMIT,
    ) -> Model:
        """Writes a file of any size from bytes, str, a path (os.PathLike) or a binary file.

        Up to inline_limit without on_progress: one request. Beyond: a
        presigned upload straight to blob storage (progress as bytes go out),
        then imported into the sandbox at path."""
        src, n = c.source_size(data, size)
        try:
            if isinstance(src, bytes) and n <= inline_limit and not (on_progress and n):
                try:
                    return self.write_file(session_id, path, src)
                except Exception as e:
                    if not c.is_too_large(e):
                        raise
            ticket = self._json(Req("POST", f"{sid(session_id)}/files/upload-url", json=body(path=path, size_bytes=n, content_type=content_type)))
            self._put(ticket, src, n, on_progress)
            return self._json(Req("POST", f"{sid(session_id)}/files/import", json={"transferId": ticket["transferId"]}))
        finally:
            if src is not data and hasattr(src, "close"):
                src.close()

    def _put(self, ticket: Model, src: Any, n: int, on_progress: Any) -> None:
        """Sends the bytes to a presigned upload; a 503 or 429 of storage is retried when the data can be read again."""
        headers = {k: v for k, v in ticket["headers"].items() if k.lower() != "content-length"}
        headers["Content-Length"] = str(n)
        rewind = c.Rewind(src)
        for attempt in itertools.count(1):
            content = c.chunks(rewind.reader(), n, on_progress)
            res = self._storage.request(ticket["method"], ticket["uploadUrl"], headers=headers, content=content)
            if res.is_success:
                return
            wait = c.put_retry_wait(rewind, res, attempt, self._cfg)
            if wait is None:
                raise from_answer(res.status_code, res.reason_phrase, res.headers, res.content)
            time.sleep(wait)

    def _open(self, session_id: str, path: str) -> httpx.Response:
        """The response carrying a file's bytes: inline, or on its 413 the presigned download."""
        try:
            return self._send(Req("GET", f"{sid(session_id)}/files/content", params={"path": path}, accept="*/*", idempotent=True))
        except Exception as e:
            if not c.is_too_large(e):
                raise
        ticket = self.download_url(session_id, path)
        res = self._storage.send(self._storage.build_request("GET", ticket["downloadUrl"]), stream=True)
        if not res.is_success:
            raw = res.read()
            res.close()
            raise from_answer(res.status_code, res.reason_phrase, res.headers, raw)
        return res

    def iter_file(self, session_id: str, path: str, chunk_size: int = 256 * 1024) -> Iterator[bytes]:
        """A file of any size as chunks of bytes, read as they arrive."""
        res = self._open(session_id, path)
        try:
            yield from res.iter_bytes(chunk_size)
        finally:
            res.close()

    def download_file(self, session_id: str, path: str, dest: Union[None, str, "os.PathLike[str]", IO[bytes]] = None) -> Any:
        """A file of any size: its bytes, or with dest (a path or a binary file) written there, returning the byte count."""
        if dest is None:
            return b"".join(self.iter_file(session_id, path))
        f = open(dest, "wb") if isinstance(dest, (str, os.PathLike)) else dest
        n = 0
        try:
            for b in self.iter_file(session_id, path):
                f.write(b)
                n += len(b)
        finally:
            if f is not dest:
                f.close()
        return n
