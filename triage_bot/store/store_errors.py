"""What a storage error means for a caller, in one short line fit for a log or /healthz.

`storage_failure(error)` is True for the errors of a database or queue that is down, full,
read-only or failing (SQLite's SQLITE_FULL, SQLITE_IOERR and friends, whatever SQLAlchemy
wrapped them in; PostgreSQL's; Redis's): the answer to them is "later" (a 503 to GitHub,
which redelivers; a job retried), never a traceback. `describe(error)` says what failed
without the SQL, its parameters, a URL or a directory: at most the file's name.
"""

from __future__ import annotations

import re
import sqlite3

import redis
from sqlalchemy.exc import DBAPIError, OperationalError

# SQLite's primary result codes (the low byte of an extended code) of a storage that cannot
# be used now: BUSY 5, LOCKED 6, NOMEM 7, READONLY 8, IOERR 10, CORRUPT 11, FULL 13,
# CANTOPEN 14, PROTOCOL 15, NOTADB 26.
_SQLITE_STORAGE_CODES = {5, 6, 7, 8, 10, 11, 13, 14, 15, 26}
# The same, by message, for an error that lost its code on the way (older Pythons).
_SQLITE_MESSAGES = (
    "database or disk is full",
    "disk i/o error",
    "attempt to write a readonly database",
    "unable to open database file",
    "database is locked",
    "database disk image is malformed",
    "file is not a database",
)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[^\s/'\"]+)+/([^\s/'\"]+)")
MAX_CHARS = 200


def sqlite_error(error: BaseException) -> sqlite3.Error | None:
    """The sqlite3 error behind `error` (itself, or what SQLAlchemy wrapped), if any."""
    seen: BaseException | None = error
    for _ in range(5):  # a short chain: SQLAlchemy's wrapper, then its cause
        if seen is None:
            return None
        if isinstance(seen, sqlite3.Error):
            return seen
        seen = seen.orig if isinstance(seen, DBAPIError) else seen.__cause__
    return None


def storage_failure(error: BaseException) -> bool:
    """True when `error` says the database or queue cannot be used now (see above)."""
    found = sqlite_error(error)
    if found is not None:
        code = getattr(found, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code & 0xFF in _SQLITE_STORAGE_CODES
        return str(found).lower().startswith(_SQLITE_MESSAGES)
    if isinstance(error, OperationalError):  # PostgreSQL: connection lost, disk full, ...
        return True
    return isinstance(error, redis.ConnectionError | redis.TimeoutError | redis.ResponseError)


def describe(error: BaseException) -> str:
    """`Type: first line`, SQLite's code name first when known, no SQL, URL or directory."""
    found = sqlite_error(error)
    inner: BaseException = found if found is not None else _unwrapped(error)
    lines = str(inner).strip().splitlines()
    text = _PATH.sub(r"\1", _URL.sub("<url>", lines[0] if lines else ""))
    name = getattr(inner, "sqlite_errorname", None) or type(inner).__name__
    return f"{name}: {text}"[:MAX_CHARS] if text else str(name)


def verdict(error: BaseException) -> str:
    """One word for /healthz: full, unwritable, unreachable or failed."""
    found = sqlite_error(error)
    text = str(found if found is not None else _unwrapped(error)).lower()
    if "full" in text or "no space" in text or text.startswith("oom "):
        return "full"
    if any(word in text for word in ("readonly", "read-only", "read only", "i/o error")):
        return "unwritable"
    if isinstance(error, redis.ConnectionError | redis.TimeoutError) or (
        found is None and isinstance(error, OperationalError)
    ):
        return "unreachable"
    return "failed"


def _unwrapped(error: BaseException) -> BaseException:
    orig = error.orig if isinstance(error, DBAPIError) else None
    return orig if isinstance(orig, BaseException) else error
