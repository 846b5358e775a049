"""What the sync and async clients share: configuration, requests as data,
retry waits, results as objects, and the reading of stream lines."""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

import httpx

from .errors import IncompleteStreamError, SessionboxError, from_problem, is_problem

#: Bytes in memory up to this size are written in one request; larger go presigned.
INLINE_LIMIT = 4 * 1024 * 1024
#: Retried on idempotent calls: too many requests, and unavailable.
RETRYABLE = frozenset({429, 503})
#: Long calls are kept alive by the server (spaces, keepalive lines), so a read
#: waits at most this long between bytes.
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=15.0)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class Model(dict):
    """A JSON object of the API: a dict, with its keys also as attributes, in
    the API's camelCase or in snake_case (``r.exit_code`` is ``r["exitCode"]``)."""

    def __getattr__(self, name: str) -> Any:
        for key in (name, _camel(name)):
            if key in self:
                return self[key]
        raise AttributeError(f"{type(self).__name__} has no {name!r}")


def wrap(v: Any, cls: type = Model) -> Any:
    """JSON as Models, all the way down."""
    if isinstance(v, dict):
        return cls({k: wrap(x) for k, x in v.items()})
    if isinstance(v, list):
        return [wrap(x) for x in v]
    return v


class Execution(Model):
    """An execution's result; ``text`` is the last expression's value as text (E2B's ``execution.text``)."""

    @property
    def text(self) -> Optional[str]:
        for r in self.get("results") or []:
            if r.get("isMainResult"):
                return r.get("text")
        return None


@dataclass
class Config:
    base_url: str
    api_key: Optional[str]
    headers: Dict[str, str]
    max_retries: int
    base_delay: float
    max_delay: float
    timeout: Any


def make_config(
    base_url: Optional[str],
    api_key: Optional[str],
    headers: Optional[Mapping[str, str]],
    max_retries: int,
    base_delay: float,
    max_delay: float,
    timeout: Any,
) -> Config:
    url = base_url or os.environ.get("SESSIONBOX_URL")
    if not url:
        raise ValueError("sessionbox: base_url is required (or set SESSIONBOX_URL)")
    return Config(
        base_url=url.rstrip("/"),
        api_key=api_key or os.environ.get("SESSIONBOX_API_KEY") or None,
        headers=dict(headers or {}),
        max_retries=max_retries,
        base_delay=base_delay,
        max_delay=max_delay,
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
    )


def client_headers(cfg: Config) -> Dict[str, str]:
    h = {"User-Agent": "sessionbox-python"}
    h.update(cfg.headers)
    if cfg.api_key:
        h["Authorization"] = f"Bearer {cfg.api_key}"
    return h


@dataclass
class Req:
    """A request as the transports send it."""

    method: str
    path: str
    params: Optional[Dict[str, Any]] = None
    json: Any = None
    content: Optional[bytes] = None
    accept: str = "application/json"
    #: Safe to send again: retried on 429 and 503.
    idempotent: bool = False
    headers: Dict[str, str] = field(default_factory=dict)

    def build(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        h = {"Accept": self.accept, **self.headers}
        params = {k: v for k, v in (self.params or {}).items() if v is not None}
        if self.json is not None:
            return client.build_request(self.method, self.path, params=params, json=self.json, headers=h)
        if self.content is not None:
            h["Content-Type"] = "application/octet-stream"
            return client.build_request(self.method, self.path, params=params, content=self.content, headers=h)
        return client.build_request(self.method, self.path, params=params, headers=h)


def retry_wait(req: Req, res: httpx.Response, attempt: int, cfg: Config) -> Optional[float]:
    """Seconds before the next attempt, or None to give up with this answer.

    The server's Retry-After when it gave one (not shortened: past max_delay
    the call fails at once and the error's retry_after says when), else
    exponential backoff with jitter."""
    from .errors import parse_retry_after

    if not req.idempotent or res.status_code not in RETRYABLE or attempt > cfg.max_retries:
        return None
    ra = parse_retry_after(res.headers.get("Retry-After"))
    if ra is not None:
        return ra if ra <= cfg.max_delay else None
    return backoff(attempt, cfg)


#: Failures of a request that never reached the server: safe to send again, even an execute.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


def backoff(attempt: int, cfg: Config) -> Optional[float]:
    """Exponential backoff with jitter before retry attempt (from 1), or None past max_retries."""
    if attempt > cfg.max_retries:
        return None
    full = min(cfg.max_delay, cfg.base_delay * 2 ** (attempt - 1))
    return full / 2 + random.random() * full / 2


def sid(session_id: str) -> str:
    return "/v1/sessions/" + quote(session_id, safe="")


def seg(v: str) -> str:
    return quote(v, safe="")


def new_session_id() -> str:
    return f"s-{uuid.uuid4()}"


def body(**kw: Any) -> Dict[str, Any]:
    """A JSON body of the keyword arguments given, snake_case named as the API names them."""
    return {_camel(k): v for k, v in kw.items() if v is not None}


def result_or_raise(v: Any, cls: type = Model) -> Any:
    """A long call is answered 200 early and kept alive; if it then fails the body is a problem."""
    if is_problem(v) and "success" not in v:
        raise from_problem(v)
    return wrap(v, cls)


def stream_line(raw: str) -> Optional[Model]:
    """A parsed stream line; raises the problem of a failure line."""
    if not raw.strip():
        return None
    try:
        v = json.loads(raw)
    except ValueError:
        v = None
    if not isinstance(v, dict) or not isinstance(v.get("type"), str):
        # A proxy's interjection is not mistaken for the service's output.
        raise SessionboxError(502, "about:blank", "Bad stream", f"a stream line is not a JSON object with a type: {raw[:200]!r}")
    if v["type"] == "failure":
        raise from_problem(v["problem"])
    return wrap(v)


def incomplete(res: httpx.Response) -> IncompleteStreamError:
    return IncompleteStreamError(
        502,
        "about:blank",
        "Incomplete stream",
        "the stream ended before its done line: the call's outcome is unknown",
        request_id=res.headers.get("X-Request-Id"),
    )


class Collector:
    """Rebuilds a whole result from stream lines: the done line carries the
    outcome, the lines before it the output."""

    def __init__(self) -> None:
        self.out: List[str] = []
        self.err: List[str] = []
        self.results: List[Model] = []
        self.error: Optional[Model] = None

    def take(self, line: Model) -> Tuple[Optional[str], Any]:
        """Records a line; returns the callback to call (by name) and its argument."""
        t = line["type"]
        if t == "stdout":
            self.out.append(line["text"])
            return "on_stdout", line["text"]
        if t == "stderr":
            self.err.append(line["text"])
            return "on_stderr", line["text"]
        if t == "result":
            self.results.append(line["result"])
            return "on_result", line["result"]
        if t == "error":
            self.error = line["error"]
            return "on_error", line["error"]
        return None, None

    def execution(self, summary: Mapping[str, Any]) -> Execution:
        r = Execution(summary)
        r.update(stdout="".join(self.out), stderr="".join(self.err), results=self.results)
        if self.error is not None:
            r["error"] = self.error
        return r

    def command(self, summary: Mapping[str, Any]) -> Model:
        r = Model(summary)
        r.update(stdout="".join(self.out), stderr="".join(self.err))
        if self.error is not None:
            r["error"] = self.error
        return r


Callbacks = Dict[str, Optional[Callable[[Any], Any]]]


def source_size(data: Any, size: Optional[int]) -> Tuple[Any, int]:
    """Upload data as bytes or a readable binary file, and its size.

    Takes bytes, str (UTF-8), a path (str paths must be os.PathLike: a str is
    content) or a binary file object; a file that cannot seek needs size."""
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if size is not None and size != len(data):
            raise ValueError(f"sessionbox: size is {size} but the data holds {len(data)} bytes")
        return data, len(data)
    if isinstance(data, os.PathLike):
        f = open(data, "rb")
        return f, os.fstat(f.fileno()).st_size
    if hasattr(data, "read"):
        if size is not None:
            return data, size
        try:
            here = data.tell()
            end = data.seek(0, os.SEEK_END)
            data.seek(here)
            return data, end - here
        except (AttributeError, OSError):
            raise ValueError("sessionbox: upload of a stream that cannot seek needs size") from None
    raise TypeError(f"sessionbox: cannot upload a {type(data).__name__}: give bytes, str, a path or a binary file")


def chunks(f: Any, size: int, on_progress: Optional[Callable[[int, int], Any]], chunk: int = 256 * 1024):
    """A file's bytes in chunks, exactly size of them, reporting progress."""
    sent = 0
    if on_progress:
        on_progress(0, size)
    while sent < size:
        b = f.read(min(chunk, size - sent))
        if not b:
            raise ValueError(f"sessionbox: the data held {sent} bytes, not the {size} announced")
        sent += len(b)
        yield b
        if on_progress:
            on_progress(sent, size)


def is_too_large(err: BaseException) -> bool:
    return isinstance(err, SessionboxError) and err.status == 413


class BytesReader:
    """bytes read in slices without copying the whole."""

    def __init__(self, b: bytes) -> None:
        self._m = memoryview(b)
        self._at = 0

    def read(self, n: int) -> bytes:
        out = bytes(self._m[self._at : self._at + n])
        self._at += len(out)
        return out


class Rewind:
    """Upload data that can be read again from its start, for a retried PUT:
    bytes always, a file when it can seek; None for a stream that cannot."""

    def __init__(self, src: Any) -> None:
        self.src = src
        self.start: Optional[int] = None
        if not isinstance(src, bytes):
            try:
                self.start = src.tell()
            except (AttributeError, OSError):
                self.start = None

    @property
    def rereadable(self) -> bool:
        return isinstance(self.src, bytes) or self.start is not None

    def reader(self) -> Any:
        """A reader at the data's start."""
        if isinstance(self.src, bytes):
            return BytesReader(self.src)
        if self.start is not None:
            self.src.seek(self.start)
        return self.src


def put_retry_wait(rewind: Rewind, res: httpx.Response, attempt: int, cfg: Config) -> Optional[float]:
    """The wait before sending a presigned PUT again (storage's 503 SlowDown, a 429), or None."""
    if not rewind.rereadable:
        return None
    return retry_wait(Req("PUT", "", idempotent=True), res, attempt, cfg)

