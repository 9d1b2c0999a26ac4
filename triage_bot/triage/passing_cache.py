"""Passing logs kept on disk, so that a reference log is downloaded once, not once per triage.

A pull request's every push (and every pull request into the same base) compares with the
same few passing jobs: their logs are read once, and what the comparison needs is kept, the
sorted hashes of their normalised lines (compare.PassingLog.save: 8 bytes a line, at most
8 MiB a job), one file per job under `<TRIAGE_CACHE_DIR>/compare/`. A job's log never changes,
so an entry is good until it expires (`MAX_AGE_DAYS` after it was last used: GitHub keeps logs
90 days, but a reference that old has been replaced by newer passing runs), and the whole
cache is kept under `max_bytes` by removing the least recently used entries after each write.
Entries are written atomically (compare.py); one that cannot be read is removed and counts as
absent. A cache that cannot be written (a read-only disk) is simply not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path

from triage_bot.config import DEFAULT_COMPARE_CACHE_BYTES
from triage_bot.core import cache
from triage_bot.core.compare import PassingLog

log = logging.getLogger(__name__)

MAX_AGE_DAYS = 14.0
SUFFIX = ".npz"


def default_dir() -> Path:
    return cache.cache_dir() / "compare"


class PassingCache:
    """The passing logs of jobs, by the host, repository and id of the job."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        max_bytes: int = DEFAULT_COMPARE_CACHE_BYTES,  # 32 of the largest entries
        max_age_s: float = MAX_AGE_DAYS * 86400,
    ) -> None:
        self.root = root or default_dir()
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s

    def path(self, api_url: str, repo: str, job_id: int, catalog_key: str) -> Path:
        # Job ids are unique on one GitHub; the host and repository keep two apart, and the
        # catalog's key two readings of one log with different triggers (repositories' own).
        place = f"{api_url}\n{repo}\n{catalog_key}"
        where = hashlib.blake2b(place.encode(), digest_size=6).hexdigest()
        return self.root / f"{job_id}-{where}{SUFFIX}"

    def get(self, api_url: str, repo: str, job_id: int, catalog_key: str) -> PassingLog | None:
        path = self.path(api_url, repo, job_id, catalog_key)
        try:
            age = time.time() - path.stat().st_mtime
        except OSError:
            return None
        if age > self.max_age_s:
            path.unlink(missing_ok=True)
            return None
        try:
            passing = PassingLog.load(path)
        except (OSError, ValueError) as error:
            log.warning("passing-log cache: %s ignored and removed: %s", path.name, error)
            _remove(path)
            return None
        _touch(path)  # recently used: the last to be evicted
        return passing

    def put(
        self, api_url: str, repo: str, job_id: int, catalog_key: str, passing: PassingLog
    ) -> None:
        path = self.path(api_url, repo, job_id, catalog_key)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            passing.save(path)
        except OSError as error:
            log.warning("passing-log cache: cannot write %s: %s", path, error)
            return
        self.prune()

    def prune(self) -> None:
        """Remove expired entries, then the least recently used ones past `max_bytes`, and
        leftovers of writes that died half-way."""
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
            stale = now - stat.st_mtime > self.max_age_s
            if entry.name.endswith(".tmp"):
                if now - stat.st_mtime > 3600:  # a write of a live process takes seconds
                    _remove(path)
            elif stale:
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


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)
