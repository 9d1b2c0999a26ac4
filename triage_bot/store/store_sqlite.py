"""SQLite files that fail with an error when the disk does, instead of killing the process.

SQLite in WAL mode keeps its wal-index in the `-shm` file beside the database and maps it with
mmap. A write to a mapped page that the filesystem cannot back raises SIGBUS, which kills the
process: a Python signal handler runs between bytecodes, after the faulting C instruction,
which would fault again. SQLite grows the -shm 32 KiB at a time by writing one byte at the end
of each 4 KiB page, so that a full disk is an error (SQLITE_IOERR_SHMSIZE) rather than a
SIGBUS. That byte reserves a whole page only where a block is as large as a page: on ext4 with
1 KiB blocks (what mkfs makes for a filesystem under 512 MiB) it reserves one block in four,
and with the disk full the first write into another block of the map raised SIGBUS (measured,
tests/hostile/test_health.py). So each connection here:

- refuses to open (SQLITE_FULL, "database or disk is full") when the data directory has less
  than MIN_FREE_BYTES free, before SQLite first maps the -shm;
- once SQLite has mapped it, allocates the whole -shm (SHM_BYTES: 32 wal-index regions, a WAL
  of 130,000 frames; the WAL is checkpointed at 1,000) with posix_fallocate, so no write into
  the map needs a new block later;
- sets mmap_size=0: the database itself is read with read(), never mapped, so a database file
  truncated under the process gives an error, not SIGBUS (0 is this build's default, not
  every build's).

What this does not cover, and why: a -shm truncated by something else while it is mapped
(another opener that does not see this process's POSIX locks, e.g. over a network filesystem,
or a person) still raises SIGBUS; nor does a copy-on-write filesystem (btrfs, ZFS), where a
write to any mapped page may need a new block. Only a rollback journal instead of WAL would
(it maps nothing): measured, that took the webhook's p99 from 11 ms to 342 ms at 200
deliveries/s (readers and the writer lock each other out), so the data directory must be on
a local, non-COW filesystem (README). locking_mode=EXCLUSIVE would keep the wal-index in heap
memory, but then `triage-bot rerun` or a second process could not open the database.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
import time
from pathlib import Path

log = logging.getLogger(__name__)

SHM_BYTES = 32 * 32 * 1024  # 32 wal-index regions of 32 KiB
MIN_FREE_BYTES = 2 * 1024 * 1024  # the -shm of the database and of the queue, and a margin
SQLITE_FULL = 13


class DiskFull(sqlite3.OperationalError):
    """The data directory is (nearly) full: raised before SQLite would use it."""

    def __init__(self, free: int) -> None:
        # SQLite's own wording first, so whatever classifies SQLite's errors knows this one.
        super().__init__(f"database or disk is full: {free // 1024} KiB free in the data directory")
        self.sqlite_errorcode = SQLITE_FULL
        self.sqlite_errorname = "SQLITE_FULL"


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use in `folder`'s filesystem."""
    return shutil.disk_usage(folder).free


def require_free_space(folder: Path, needed: int = MIN_FREE_BYTES) -> None:
    free = free_bytes(folder)
    if free < needed:
        raise DiskFull(free)


def prepare(dbapi_connection: sqlite3.Connection, path: Path | None) -> None:
    """Make a new connection to the database at `path` (None: in memory) safe, as above:
    the free-space check, mmap_size=0 and WAL mode, then the -shm mapped and allocated.
    Call it before the connection's first statement; DiskFull when the disk is full."""
    if path is not None:
        require_free_space(path.parent)
    dbapi_connection.execute("PRAGMA mmap_size=0")
    enable_wal(dbapi_connection)
    if path is not None:
        # A read maps the wal-index (and, for the first opener, truncates and regrows it),
        # so the -shm has its final inode and size before it is allocated.
        dbapi_connection.execute("SELECT count(*) FROM sqlite_master").fetchall()
        allocate_shm(path)


def enable_wal(dbapi_connection: sqlite3.Connection, wait_seconds: float = 10.0) -> None:
    """Put the database in WAL mode (readers do not block the writer), waiting for the
    other openers. WAL is a property of the file: once one connection set it, the others only
    read it. Setting it needs an exclusive lock, and SQLite answers "database is locked" at
    once, without its busy handler, when processes open an empty database together (seen in
    CI: six openers, one failed), so a locked answer is retried here until `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    pause = 0.005
    while True:
        try:
            mode = dbapi_connection.execute("PRAGMA journal_mode").fetchone()
            if mode is not None and str(mode[0]).lower() == "wal":
                return
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def allocate_shm(path: Path) -> None:
    """Give the -shm of the database at `path` all its blocks now; DiskFull when it cannot."""
    shm = Path(f"{path}-shm")
    try:
        found = os.stat(shm)
    except FileNotFoundError:
        return  # not in WAL mode: nothing is mapped
    if found.st_blocks * 512 >= SHM_BYTES:
        return  # allocated by another connection already
    fd = _sqlite_descriptor(found)
    if fd is None:
        log.warning("%s-shm could not be allocated ahead: no /proc/self/fd here", path.name)
        return
    try:
        os.posix_fallocate(fd, 0, SHM_BYTES)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise DiskFull(free_bytes(path.parent)) from None
        # Unsupported here (glibc otherwise writes the blocks itself): SQLite's own growth.
        log.warning("%s-shm could not be allocated ahead: %s", path.name, error)


def _sqlite_descriptor(file: os.stat_result) -> int | None:
    """SQLite's own descriptor of `file` in this process (Linux), found without opening it.

    Not a descriptor of our own: closing any descriptor of a file drops every POSIX lock the
    process holds on it, SQLite's included. A first version opened and closed the -shm; then
    another process's SQLite saw no lock, took itself for the first opener and truncated the
    -shm under this process's map: SIGBUS (the serve test in test_server.py did exactly so).
    SQLite keeps the descriptor while the connection being prepared is open.
    """
    folder = Path("/proc/self/fd")
    if not folder.is_dir():
        return None
    for name in os.listdir(folder):
        try:
            seen = os.stat(folder / name)  # follows the link to the file: nothing is opened
        except OSError:
            continue  # the listing's own descriptor, or one closed meanwhile
        if (seen.st_dev, seen.st_ino) == (file.st_dev, file.st_ino):
            return int(name)
    return None


def database_path(database: str | None) -> Path | None:
    """The file of a SQLite URL's database part; None for an in-memory database."""
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    return Path(database).expanduser().resolve()
