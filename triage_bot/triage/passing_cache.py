"""Passing logs kept on disk, so that a reference log is downloaded once, not once per triage.

A pull request's every push (and every pull request into the same base) compares with the
same few passing jobs. Their logs are kept as GitHub served them (at most the App's log cap),
one file per job under `<TRIAGE_CACHE_DIR>/compare/`: the comparison reads a passing log
after the failing one is classified, for the few lines it asks about (compare.PassingFile),
so the log itself is what it needs. A job's log never changes, so an entry is good until it
expires (`MAX_AGE_DAYS` after it was last used: a reference that old has been replaced by
newer passing runs), and the whole cache is kept under `max_bytes` by removing the least
recently used entries after each write. A download goes to a temporary file, renamed into
place only once complete: a reader never sees half a log. A reader holds its file open, so
an entry removed meanwhile (another worker's pruning) is still read whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from triage_bot.config import DEFAULT_COMPARE_CACHE_BYTES
from triage_bot.core import cache

log = logging.getLogger(__name__)

MAX_AGE_DAYS = 14.0
SUFFIX = ".log"
PARTIAL = ".partial"
# A partial file older than this is a download that died (a live one takes minutes at most).
STALE_PARTIAL_S = 3600


def default_dir() -> Path:
    return cache.cache_dir() / "compare"


class PassingCache:
    """The passing logs of jobs, by the host, repository and id of the job."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        max_bytes: int = DEFAULT_COMPARE_CACHE_BYTES,
        max_age_s: float = MAX_AGE_DAYS * 86400,
    ) -> None:
        self.root = root or default_dir()
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s

    def path(self, api_url: str, repo: str, job_id: int) -> Path:
        # Job ids are unique on one GitHub; the host and repository keep two apart.
        where = hashlib.blake2b(f"{api_url}\n{repo}".encode(), digest_size=6).hexdigest()
        return self.root / f"{job_id}-{where}{SUFFIX}"

    def get(self, api_url: str, repo: str, job_id: int) -> Path | None:
        """The job's log, when kept and not expired (then it is the last to be evicted)."""
        path = self.path(api_url, repo, job_id)
        try:
            age = time.time() - path.stat().st_mtime
        except OSError:
            return None
        if age > self.max_age_s:
            _remove(path)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return path

    def put(
        self, api_url: str, repo: str, job_id: int, write: Callable[[BinaryIO], bool]
    ) -> Path | None:
        """Keep the log `write` writes to the file it is given; it returns whether the log
        is whole (else nothing is kept). None also when the cache cannot be written."""
        path = self.path(api_url, repo, job_id)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}{PARTIAL}")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as file:
                whole = write(file)
            if not whole:
                _remove(partial)
                return None
            partial.replace(path)
        except OSError as error:
            log.warning("passing-log cache: cannot write %s: %s", path, error)
            return None
        finally:
            if partial.exists():
                _remove(partial)  # `write` raised: nothing half-written is left
        self.prune()
        return path

    def prune(self) -> None:
        """Remove expired entries, then the least recently used ones past `max_bytes`, and
        leftovers of downloads that died half-way."""
        now = time.time()
        entries: list[tuple[float, int, Path]] = []
        try:
            listing = list(os.scandir(self.root))
        except OSError:
            return
        for entry in listing:
            try:
                stat = entry.stat()
            except OSError:
                continue  # removed by another process meanwhile
            path = Path(entry.path)
            if entry.name.endswith(PARTIAL):
                if now - stat.st_mtime > STALE_PARTIAL_S:
                    _remove(path)
            elif now - stat.st_mtime > self.max_age_s:
                _remove(path)
            elif entry.name.endswith(SUFFIX):
                entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):  # oldest use first
            if total <= self.max_bytes:
                break
            _remove(path)
            total -= size

    def size(self) -> int:
        """Bytes the entries take."""
        try:
            return sum(p.stat().st_size for p in self.root.glob(f"*{SUFFIX}"))
        except OSError:
            return 0


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
