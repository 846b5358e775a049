"""sessionbox: a client of the sessionbox API, sync and async, on httpx.

    from sessionbox import Sessionbox

    with Sessionbox() as sb:                      # SESSIONBOX_URL, SESSIONBOX_API_KEY
        s = sb.session("chat-42")
        run = s.execute("print('hi')\\n6 * 7", on_stdout=print)
        print(run.text)                           # "42"
"""

from ._core import Execution, Model
from .aio import AsyncSessionbox
from .client import Sessionbox
from .errors import (
    ConflictError,
    ForbiddenError,
    GoneError,
    IncompleteStreamError,
    InsufficientStorageError,
    InternalServerError,
    InvalidInputError,
    LimitReachedError,
    MethodNotAllowedError,
    NotAcceptableError,
    NotFoundError,
    RequestTimeoutError,
    SessionboxError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedMediaTypeError,
    parse_retry_after,
)
from .session import AsyncSession, Session

__version__ = "0.1.0"

__all__ = [
    "AsyncSession",
    "AsyncSessionbox",
    "ConflictError",
    "Execution",
    "ForbiddenError",
    "GoneError",
    "IncompleteStreamError",
    "InsufficientStorageError",
    "InternalServerError",
    "InvalidInputError",
    "LimitReachedError",
    "MethodNotAllowedError",
    "Model",
    "NotAcceptableError",
    "NotFoundError",
    "RequestTimeoutError",
    "Session",
    "SessionboxError",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "parse_retry_after",
]
