"""Errors: one class per problem type of the API (RFC 9457 problem+json).

Catch a class (``except sessionbox.NotFoundError``) or the base
``SessionboxError`` and switch on ``.type``; never on the words of
``.detail``.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any, Dict, Optional, Type

PROBLEM_BASE = "https://sessionbox.dev/problems/"


class SessionboxError(Exception):
    """An error the API answered with, or an answer the SDK could not use.

    Attributes: ``status`` (HTTP status, or the problem's own when it came in a
    200 body or a stream's failure line), ``type`` (the problem's stable URI;
    ``about:blank`` when the answer was not a problem), ``title``, ``detail``,
    ``instance``, ``request_id`` (quote it when reporting) and ``retry_after``
    (seconds the server asked to wait, when it said).
    """

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        instance: Optional[str] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.request_id = request_id
        self.retry_after = retry_after


class InvalidInputError(SessionboxError):
    """400: the request was wrong; detail names what."""


class UnauthorizedError(SessionboxError):
    """401: no key, or a key the API does not know."""


class ForbiddenError(SessionboxError):
    """403: the key may not do this (e.g. a path outside the sandbox's home)."""


class NotFoundError(SessionboxError):
    """404: no such session, file, command, context or run."""


class MethodNotAllowedError(SessionboxError):
    """405."""


class NotAcceptableError(SessionboxError):
    """406: the Accept header asked for a form the route does not give."""


class ConflictError(SessionboxError):
    """409: the session is busy or in a state that refuses the call."""


class GoneError(SessionboxError):
    """410: the context or command lived in a sandbox the session no longer has."""


class TooLargeError(SessionboxError):
    """413: past a size limit; detail names it (files: use the presigned ways)."""


class UnsupportedMediaTypeError(SessionboxError):
    """415."""


class LimitReachedError(SessionboxError):
    """429: a rate or sandbox cap; retry_after says when to come back."""


class InternalServerError(SessionboxError):
    """500."""


class UnavailableError(SessionboxError):
    """502/503: a dependency is down or busy; retry_after when known."""


class RequestTimeoutError(SessionboxError):
    """504: the call ran past the service's time (not the code's timeout, which is a result)."""


class InsufficientStorageError(SessionboxError):
    """507: the sandbox's disk or the workspace is full."""


class IncompleteStreamError(SessionboxError):
    """A stream ended before its done line: the call's outcome is unknown."""


_BY_TYPE: Dict[str, Type[SessionboxError]] = {
    PROBLEM_BASE + name: cls
    for name, cls in {
        "invalid-input": InvalidInputError,
        "unauthorized": UnauthorizedError,
        "forbidden": ForbiddenError,
        "not-found": NotFoundError,
        "method-not-allowed": MethodNotAllowedError,
        "not-acceptable": NotAcceptableError,
        "conflict": ConflictError,
        "gone": GoneError,
        "too-large": TooLargeError,
        "unsupported-media-type": UnsupportedMediaTypeError,
        "limit-reached": LimitReachedError,
        "internal": InternalServerError,
        "unavailable": UnavailableError,
        "timeout": RequestTimeoutError,
        "insufficient-storage": InsufficientStorageError,
    }.items()
}


def is_problem(v: Any) -> bool:
    """Whether a parsed JSON value is a problem object rather than a result."""
    return (
        isinstance(v, dict)
        and isinstance(v.get("type"), str)
        and isinstance(v.get("status"), int)
        and isinstance(v.get("title"), str)
        and isinstance(v.get("detail"), str)
    )


def from_problem(p: Dict[str, Any], retry_after: Optional[float] = None, request_id: Optional[str] = None) -> SessionboxError:
    """The error of the problem's type."""
    cls = _BY_TYPE.get(p["type"], SessionboxError)
    return cls(
        status=p["status"],
        type=p["type"],
        title=p["title"],
        detail=p["detail"],
        instance=p.get("instance"),
        request_id=p.get("requestId") or request_id,
        retry_after=retry_after,
    )


def from_answer(status: int, reason: str, headers: Any, body: bytes) -> SessionboxError:
    """The error for a failed answer: its problem when it is one, else its status and the start of its body."""
    retry_after = parse_retry_after(headers.get("Retry-After"))
    request_id = headers.get("X-Request-Id")
    try:
        v = json.loads(body)
    except ValueError:
        v = None
    if is_problem(v):
        return from_problem(v, retry_after, request_id)
    snippet = body[:500].decode("utf-8", "replace").strip()
    return SessionboxError(
        status=status,
        type="about:blank",
        title=reason or f"HTTP {status}",
        detail=snippet or f"the server answered {status} with no body",
        request_id=request_id,
        retry_after=retry_after,
    )


def parse_retry_after(v: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header: delay-seconds or an HTTP date; None when absent or unreadable."""
    if v is None:
        return None
    s = v.strip()
    if s.isdigit():
        return float(s)
    try:
        at = email.utils.parsedate_to_datetime(s)
    except (TypeError, ValueError):
        return None
    if at is None:
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))
