"""The asynchronous client: the same calls as Sessionbox, awaited; streams
are async iterators; callbacks may be plain functions or coroutines."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
from typing import IO, Any, AsyncIterator, Callable, Mapping, Optional, Union

import httpx

from . import _core as c
from ._api import _Api
from ._core import Model, Req, body, sid
from .client import UploadData
from .errors import from_answer
from .session import AsyncSession


class AsyncSessionbox(_Api):
    """An asyncio client of the sessionbox API; see Sessionbox. ``async with AsyncSessionbox() as sb:``."""

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
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self._cfg = c.make_config(base_url, api_key, headers, max_retries, base_delay, max_delay, timeout)
        self._http = httpx.AsyncClient(
            base_url=self._cfg.base_url, headers=c.client_headers(self._cfg), timeout=self._cfg.timeout, transport=transport
        )
        # Presigned URLs carry their own authority: the key never goes to storage.
        self._storage = httpx.AsyncClient(timeout=self._cfg.timeout, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._storage.aclose()

    async def __aenter__(self) -> "AsyncSessionbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # Plumbing.

    async def _send(self, req: Req) -> httpx.Response:
        for attempt in itertools.count(1):
            try:
                res = await self._http.send(req.build(self._http), stream=True)
            except c.NOT_SENT:
                # The server never got the request: sending it again is safe.
                pause = c.backoff(attempt, self._cfg)
                if pause is None:
                    raise
                await asyncio.sleep(pause)
                continue
            if res.is_success:
                return res
            try:
                raw = await res.aread()
            finally:
                await res.aclose()
            wait = c.retry_wait(req, res, attempt, self._cfg)
            if wait is None:
                raise from_answer(res.status_code, res.reason_phrase, res.headers, raw)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _json(self, req: Req, cls: type = Model) -> Any:
        res = await self._send(req)
        try:
            await res.aread()
            return c.result_or_raise(res.json(), cls)
        finally:
            await res.aclose()

    async def _none(self, req: Req) -> None:
        await (await self._send(req)).aclose()

    async def _bytes(self, req: Req) -> bytes:
        res = await self._send(req)
        try:
            return await res.aread()
        finally:
            await res.aclose()

    async def _stream(self, req: Req) -> AsyncIterator[Model]:
        req.accept = "application/x-ndjson"
        res = await self._send(req)
        try:
            async for raw in res.aiter_lines():
                line = c.stream_line(raw)
                if line is None:
                    continue
                yield line
                if line["type"] == "done":
                    return
            raise c.incomplete(res)
        finally:
            await res.aclose()

    async def _collect(self, lines: AsyncIterator[Model], cbs: c.Callbacks, command: bool = False) -> Any:
        col = c.Collector()
        async for line in lines:
            if line["type"] == "done":
                return col.command(line["summary"]) if command else col.execution(line["summary"])
            name, arg = col.take(line)
            cb = cbs.get(name) if name else None
            if cb:
                r = cb(arg)
                if inspect.isawaitable(r):
                    await r
        raise AssertionError("unreachable: the stream raises when cut")

    # Sessions, runs and files: more than one request each.

    def session(self, session_id: str) -> AsyncSession:
        """A handle on a session (sends nothing); its methods are awaited as the client's are."""
        return AsyncSession(self, session_id)

    async def create_session(self, session_id: Optional[str] = None, **start: Any) -> AsyncSession:
        """Starts a session (a fresh id unless given) and returns its handle."""
        s = self.session(session_id or c.new_session_id())
        await self.start(s.session_id, **start)
        return s

    async def sessions(self, limit: Optional[int] = None) -> AsyncIterator[Model]:
        cursor = None
        while True:
            page = await self.list_sessions(limit, cursor)
            for s in page["sessions"]:
                yield s
            cursor = page.get("nextCursor")
            if not cursor:
                return

    async def wait_for_run(self, run_id: str, interval: float = 0.5) -> Model:
        while True:
            run = await self.get_run(run_id)
            if run["status"] in ("succeeded", "failed"):
                return run
            await asyncio.sleep(interval)

    async def upload_file(
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
        """Writes a file of any size; see Sessionbox.upload_file. A file object is read in a worker thread."""
        src, n = c.source_size(data, size)
        try:
            if isinstance(src, bytes) and n <= inline_limit and not (on_progress and n):
                try:
                    return await self.write_file(session_id, path, src)
                except Exception as e:
                    if not c.is_too_large(e):
                        raise
            ticket = await self._json(
                Req("POST", f"{sid(session_id)}/files/upload-url", json=body(path=path, size_bytes=n, content_type=content_type))
            )
            await self._put(ticket, src, n, on_progress)
            return await self._json(Req("POST", f"{sid(session_id)}/files/import", json={"transferId": ticket["transferId"]}))
        finally:
            if src is not data and hasattr(src, "close"):
                src.close()

    async def _put(self, ticket: Model, src: Any, n: int, on_progress: Any) -> None:
        """Sends the bytes to a presigned upload; a 503 or 429 of storage is retried when the data can be read again."""
        headers = {k: v for k, v in ticket["headers"].items() if k.lower() != "content-length"}
        headers["Content-Length"] = str(n)
        rewind = c.Rewind(src)
        for attempt in itertools.count(1):
            res = await self._storage.request(ticket["method"], ticket["uploadUrl"], headers=headers, content=_content(rewind, n, on_progress))
            if res.is_success:
                return
            wait = c.put_retry_wait(rewind, res, attempt, self._cfg)
            if wait is None:
                raise from_answer(res.status_code, res.reason_phrase, res.headers, res.content)
            await asyncio.sleep(wait)

    async def _open(self, session_id: str, path: str) -> httpx.Response:
        try:
            return await self._send(Req("GET", f"{sid(session_id)}/files/content", params={"path": path}, accept="*/*", idempotent=True))
        except Exception as e:
            if not c.is_too_large(e):
                raise
        ticket = await self.download_url(session_id, path)
        res = await self._storage.send(self._storage.build_request("GET", ticket["downloadUrl"]), stream=True)
        if not res.is_success:
            raw = await res.aread()
            await res.aclose()
            raise from_answer(res.status_code, res.reason_phrase, res.headers, raw)
        return res

    async def iter_file(self, session_id: str, path: str, chunk_size: int = 256 * 1024) -> AsyncIterator[bytes]:
        """A file of any size as chunks of bytes, as they arrive."""
        res = await self._open(session_id, path)
        try:
            async for b in res.aiter_bytes(chunk_size):
                yield b
        finally:
            await res.aclose()

    async def download_file(self, session_id: str, path: str, dest: Union[None, str, "os.PathLike[str]", IO[bytes]] = None) -> Any:
        """A file of any size: its bytes, or with dest (a path or a binary file) written there, returning the byte count."""
        if dest is None:
            return b"".join([b async for b in self.iter_file(session_id, path)])
        f = open(dest, "wb") if isinstance(dest, (str, os.PathLike)) else dest
        n = 0
        try:
            async for b in self.iter_file(session_id, path):
                f.write(b)
                n += len(b)
        finally:
            if f is not dest:
                f.close()
        return n


async def _content(rewind: c.Rewind, n: int, on_progress: Any) -> AsyncIterator[bytes]:
    """The data's chunks; a file is read in a worker thread, as reading may block."""
    in_memory = isinstance(rewind.src, bytes)
    it = c.chunks(await asyncio.to_thread(rewind.reader) if not in_memory else rewind.reader(), n, on_progress)
    while True:
        b = next(it, None) if in_memory else await asyncio.to_thread(next, it, None)
        if b is None:
            return
        yield b

