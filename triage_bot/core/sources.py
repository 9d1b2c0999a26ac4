"""Job logs from the command line: files, folders of job logs, archives, stdin.

What a file is comes from its first bytes, never from its name: a zip archive, a tar archive
(plain, or compressed with gzip, bzip2 or xz) or a single log compressed with gzip, bzip2 or xz
are opened as such, on stdin too (an archive on stdin is first copied to a temporary file: a
zip can only be read from its end). Every other file is one job, named by its file name
without `.log`/`.txt` (and `.gz`/`.bz2`/`.xz`).

A zip in the layout of GitHub's "Download log archive" (`N_job name.txt` at the top, and
`job name/N_step name.txt` per step) gives one job per `N_job name.txt`; a job's step files
are the same log cut by step, and are read (in step order) only for a job whose own file is
missing. Any other archive gives one job per member.

What is not a job log is skipped with a note, never fatal: in folders and archives, files
named like documents or images (README*, LICENSE*, *.md, *.png, ...), hidden files; anywhere,
empty files and binary ones (a NUL byte or mostly control bytes in the first KiB, after
decompression). A broken archive or unreadable file is one note, and the rest is triaged.
Logs are read in 1 MiB chunks, so a log of any size streams in bounded memory.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, cast

CHUNK_BYTES = 1 << 20
# The first bytes looked at to tell a log from a binary file.
SNIFF_BYTES = 1024
_LOG_SUFFIXES = (".log", ".txt")
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
# Names that are not job logs, where a folder or an archive holds them beside the logs.
_NOT_LOG_STEMS = ("readme", "license", "licence", "copying", "changelog")
_DOCUMENT_SUFFIXES = (".md", ".markdown", ".rst", ".adoc", ".html", ".htm", ".pdf")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".ico")
_NOT_LOG_SUFFIXES = frozenset((*_DOCUMENT_SUFFIXES, *_IMAGE_SUFFIXES))
# GitHub's log archive: `3_build (3.11).txt`, `build (3.11)/5_Run tests.txt`.
_NUMBERED_TXT = re.compile(r"(?P<number>\d+)_(?P<name>.+)\.txt")
# A control byte other than tab, newline, vertical tab, form feed, carriage return and ESC
# (colour codes), or a byte that is not UTF-8: more than this share of them is binary.
_BINARY_SHARE = 0.3
_CONTROL = frozenset(range(32)) - {9, 10, 11, 12, 13, 27}

# Each opens a path or a binary stream, decompressing.
_DECOMPRESSING: dict[str, Callable[..., Any]] = {
    "gzip": gzip.open,
    "bzip2": bz2.open,
    "xz": lzma.open,
}
# What a broken archive or unreadable file raises, while it is listed or read.
BROKEN = (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, lzma.LZMAError, zlib.error)

Warn = Callable[[str], None]


class InputError(Exception):
    """Input the triage cannot use, with a message for the person who gave it."""


class Skipped(Exception):
    """A file that is not a job log (empty, binary); the message says why."""


@dataclass(frozen=True)
class JobLog:
    name: str
    open: Callable[[], BinaryIO]
    origin: str = ""  # what a note names: the path, or ARCHIVE:MEMBER
    size: int | None = None  # the log's byte count, when known before reading it
    # The folders it was found in (an archive counts as one), nearest last: what tells two
    # jobs of the same name apart.
    where: tuple[str, ...] = ()


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES) -> Generator[bytes, None, None]:
    with stream:
        while chunk := stream.read(size):
            yield chunk


def log_chunks(job: JobLog) -> Iterator[bytes]:
    """The job's log in chunks; raises Skipped first if it is empty or binary. A member of
    an archive that is itself compressed (`unit.log.gz` in a zip) is decompressed."""
    chunks, head = _sniffed(job.open)
    kind = archive_kind(head)
    if kind in _DECOMPRESSING:
        chunks.close()
        chunks, head = _sniffed(lambda: cast(BinaryIO, _DECOMPRESSING[kind](job.open())))
    reason = not_text(head)
    if reason is not None:
        chunks.close()
        raise Skipped(reason)
    yield head
    yield from chunks


def _sniffed(
    opener: Callable[[], BinaryIO],
) -> tuple[Generator[bytes, None, None], bytes]:
    """The stream's chunks, and its first SNIFF_BYTES or more (taken from those chunks)."""
    chunks = read_chunks(opener())
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= SNIFF_BYTES:
            break
    return chunks, head


def not_text(head: bytes) -> str | None:
    """Why a log that starts with `head` is not a log, or None."""
    if not head:
        return "empty file"
    kind = archive_kind(head)
    if kind is not None:
        return f"{kind} inside an archive or compressed file: not read (unpack it first)"
    sample = head[:SNIFF_BYTES]
    if b"\x00" in sample:
        return "binary file (NUL bytes; a UTF-16 log is not read either)"
    text = sample.decode("utf-8", errors="replace")
    if len(sample) == SNIFF_BYTES:
        text = text[:-3]  # a character cut at the end of the sample is no sign of binary
    odd = sum(1 for c in text if c == "\ufffd" or (ord(c) in _CONTROL))
    if text and odd / len(text) > _BINARY_SHARE:
        return "binary file (mostly not text)"
    return None


def archive_kind(head: bytes) -> str | None:
    """What the first bytes of a file say it is: an archive or compressed file, or None."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip archive"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    if head[257:262] == b"ustar":
        return "tar archive"
    return None


def job_name(path: Path | str) -> str:
    name = PurePosixPath(str(path)).name
    for suffix in _COMPRESSED_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    for suffix in _LOG_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def archive_stem(path: Path | str) -> str:
    """An archive's file name without its archive endings: what it is called as a folder."""
    name = PurePosixPath(str(path)).name
    for suffix in (*_COMPRESSED_SUFFIXES, ".tgz", ".tar", ".zip"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def looks_like_a_document(name: str) -> bool:
    """README, LICENSE, markdown, images...: beside logs in a folder, not logs."""
    pure = PurePosixPath(name)
    lowered = pure.name.lower()
    return lowered.startswith(_NOT_LOG_STEMS) or pure.suffix.lower() in _NOT_LOG_SUFFIXES


# ---- the command line's paths ---------------------------------------------------------------


def collect(arguments: list[str], warn: Warn | None = None) -> list[JobLog]:
    """The job logs the command line names, in the order given (folders sorted), with
    distinct names. What cannot be used is said through `warn` and left out (without
    `warn`, the first such problem raises InputError)."""

    def note(problem: str) -> None:
        if warn is None:
            raise InputError(problem)
        warn(problem)

    jobs: list[JobLog] = []
    for argument in arguments:
        try:
            jobs.extend(_argument(argument, note))
        except InputError as problem:
            note(str(problem))
        except BROKEN as error:
            note(f"{argument}: {describe(error)}")
    return distinct(jobs)


def _argument(argument: str, warn: Warn) -> list[JobLog]:
    if argument == "-":
        return _stdin(warn)
    path = Path(argument)
    if path.is_dir():
        found = _folder(path, warn)
        if not found:
            raise InputError(f"{argument}: folder holds no log files")
        return found
    if path.is_file():
        return _file(path, path.parent.parts, warn)
    if path.exists():
        raise InputError(f"{argument}: not a regular file or folder")
    raise InputError(f"{argument}: no such file or folder")


def _folder(folder: Path, warn: Warn) -> list[JobLog]:
    jobs: list[JobLog] = []
    for path in sorted(folder.rglob("*")):
        inside = path.relative_to(folder).parts
        if any(part.startswith(".") for part in inside) or not path.is_file():
            continue
        if looks_like_a_document(path.name):
            warn(f"{path}: skipped: not a log (a document or image, by its name)")
            continue
        try:
            jobs.extend(_file(path, path.parent.parts, warn))
        except InputError as problem:
            warn(str(problem))
        except BROKEN as error:
            warn(f"{path}: {describe(error)}")
    return jobs


def _file(path: Path, where: tuple[str, ...], warn: Warn, shown: str | None = None) -> list[JobLog]:
    """The jobs in one file, by what its first bytes say it is."""
    shown = shown or str(path)
    with path.open("rb") as stream:
        head = stream.read(512)
    kind = archive_kind(head)
    if kind == "zip archive":
        return _zip(path, where, shown, warn)
    if kind == "tar archive":
        return _tar(path, where, shown, warn)
    if kind == "zstd":
        raise InputError(f"{shown}: zstd-compressed: not read (decompress it first)")
    if kind is not None:
        opener = _decompressor(kind, path)
        with opener() as inner:
            if archive_kind(inner.read(512)) == "tar archive":
                return _tar(path, where, shown, warn)
        return [JobLog(job_name(shown), opener, shown, None, where)]
    # Unbuffered: the classifier reads 1 MiB at a time, and a buffered reader's copy of each
    # chunk costs four times the read (0.42 s against 0.09 s a GiB from the page cache).
    return [JobLog(job_name(shown), lambda: _raw(path), shown, path.stat().st_size, where)]


def _raw(path: Path) -> BinaryIO:
    return cast(BinaryIO, path.open("rb", buffering=0))


def _decompressor(kind: str, path: Path) -> Callable[[], BinaryIO]:
    return lambda: cast(BinaryIO, _DECOMPRESSING[kind](path))


# Archives that came on stdin, copied to temporary files that live as long as the process.
_SPOOLED: list[IO[bytes]] = []


def _stdin(warn: Warn) -> list[JobLog]:
    stream = sys.stdin.buffer
    head = stream.read(512)
    if archive_kind(head) is None:
        return [JobLog("stdin", lambda: cast(BinaryIO, _Prefixed(head, stream)), "stdin")]
    spooled = tempfile.NamedTemporaryFile(prefix="triage-bot-stdin-")  # noqa: SIM115
    _SPOOLED.append(spooled)
    spooled.write(head)
    shutil.copyfileobj(stream, spooled, CHUNK_BYTES)
    spooled.flush()
    return _file(Path(spooled.name), (), warn, shown="stdin")


class _Prefixed:
    """A stream whose first bytes were already read: they come first again."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            taken, self._head = self._head[:size], self._head[size:]
            return taken
        return self._rest.read(size)

    def __enter__(self) -> _Prefixed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


# ---- archives -------------------------------------------------------------------------------


def _zip(path: Path, where: tuple[str, ...], shown: str, warn: Warn) -> list[JobLog]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InputError(f"{shown}: broken zip archive: {exc}") from exc
    members = [info.filename for info in archive.infolist() if not info.is_dir()]
    inside = (*where, archive_stem(shown))

    def opener(member: str) -> Callable[[], BinaryIO]:
        return lambda: cast(BinaryIO, archive.open(member))

    if _github_layout(members):
        return _github_jobs(members, opener, inside, shown)
    return _members(sorted(members), opener, inside, shown, warn)


def _tar(path: Path, where: tuple[str, ...], shown: str, warn: Warn) -> list[JobLog]:
    try:
        archive = tarfile.open(path, "r:*")  # noqa: SIM115 (open while its jobs are read)
        infos = [info for info in archive.getmembers() if info.isfile()]
    except BROKEN as exc:
        raise InputError(f"{shown}: broken tar archive: {describe(exc)}") from exc
    by_name = {info.name: info for info in infos}

    def opener(member: str) -> Callable[[], BinaryIO]:
        def open_member() -> BinaryIO:
            found = archive.extractfile(by_name[member])
            if found is None:
                raise OSError(f"{member}: not a file")
            return cast(BinaryIO, found)

        return open_member

    # In archive order: a compressed tar is read forward only once.
    return _members(list(by_name), opener, (*where, archive_stem(shown)), shown, warn)


def _members(
    members: list[str],
    opener: Callable[[str], Callable[[], BinaryIO]],
    inside: tuple[str, ...],
    shown: str,
    warn: Warn,
) -> list[JobLog]:
    jobs = []
    for member in members:
        pure = PurePosixPath(member)
        if any(part.startswith(".") or part == "__MACOSX" for part in pure.parts):
            continue
        if looks_like_a_document(member):
            warn(f"{shown}:{member}: skipped: not a log (a document or image, by its name)")
            continue
        where = (*inside, *pure.parent.parts)
        jobs.append(JobLog(job_name(member), opener(member), f"{shown}:{member}", None, where))
    return jobs


def _github_layout(members: list[str]) -> bool:
    """Whether every member is a `N_job.txt` at the top or a `job/N_step.txt`."""
    if not members:
        return False
    for member in members:
        parts = member.split("/")
        if len(parts) > 2 or _NUMBERED_TXT.fullmatch(parts[-1]) is None:
            return False
    return True


def _github_jobs(
    members: list[str],
    opener: Callable[[str], Callable[[], BinaryIO]],
    inside: tuple[str, ...],
    shown: str,
) -> list[JobLog]:
    """One job per `N_job.txt`, in N's order; a job's step files only where its own file
    is missing (such jobs come last)."""
    numbered: list[tuple[int, JobLog]] = []
    steps: dict[str, list[tuple[int, str]]] = {}
    for member in members:
        folder, _, file_name = member.rpartition("/")
        found = _NUMBERED_TXT.fullmatch(file_name)
        assert found is not None  # _github_layout said so
        if folder:
            steps.setdefault(folder, []).append((int(found["number"]), member))
        else:
            job = JobLog(found["name"], opener(member), f"{shown}:{member}", None, inside)
            numbered.append((int(found["number"]), job))
    jobs = [job for _, job in sorted(numbered, key=lambda pair: pair[0])]
    have = {job.name for job in jobs}
    for folder, files in sorted(steps.items()):
        if folder not in have:
            ordered = [opener(member) for _, member in sorted(files)]
            jobs.append(JobLog(folder, _joined(ordered), f"{shown}:{folder}/", None, inside))
    return jobs


def _joined(openers: list[Callable[[], BinaryIO]]) -> Callable[[], BinaryIO]:
    return lambda: cast(BinaryIO, _Chained(openers))


class _Chained:
    """The step files of one job read one after the other, as the job's log."""

    def __init__(self, openers: list[Callable[[], BinaryIO]]) -> None:
        self._openers = list(openers)
        self._current: BinaryIO | None = None

    def read(self, size: int = -1) -> bytes:
        while True:
            if self._current is None:
                if not self._openers:
                    return b""
                self._current = self._openers.pop(0)()
            data = self._current.read(size)
            if data:
                return data
            self._current.close()
            self._current = None

    def __enter__(self) -> _Chained:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._current is not None:
            self._current.close()


# ---- names ----------------------------------------------------------------------------------


def distinct(jobs: Iterable[JobLog]) -> list[JobLog]:
    """Jobs of the same name told apart by the nearest folders that differ (`a/build`,
    `b/build`), else numbered in order (`build`, `build (2)`)."""
    listed = list(jobs)
    groups: dict[str, list[int]] = {}
    for index, job in enumerate(listed):
        groups.setdefault(job.name, []).append(index)
    names = [job.name for job in listed]
    for indexes in groups.values():
        if len(indexes) > 1:
            for index, name in zip(indexes, _told_apart([listed[i] for i in indexes]), strict=True):
                names[index] = name
    taken: dict[str, int] = {}
    result = []
    for job, name in zip(listed, names, strict=True):
        taken[name] = taken.get(name, 0) + 1
        unique = name if taken[name] == 1 else f"{name} ({taken[name]})"
        result.append(replace(job, name=unique))
    return result


def _told_apart(same: list[JobLog]) -> list[str]:
    longest = max(len(job.where) for job in same)
    for depth in range(1, longest + 1):
        named = [
            "/".join((*job.where[-depth:], job.name)) if job.where else job.name for job in same
        ]
        if len(set(named)) == len(named):
            return named
    return [job.name for job in same]


def describe(error: BaseException) -> str:
    """A broken file's error as one line for a person."""
    if isinstance(error, EOFError):
        return "truncated: the compressed data ends early"
    if isinstance(error, zipfile.BadZipFile):
        return f"broken zip archive: {error}"
    if isinstance(error, gzip.BadGzipFile):
        return f"broken gzip: {error}"
    if isinstance(error, (lzma.LZMAError, zlib.error)):
        return f"broken compressed data: {error}"
    if isinstance(error, tarfile.TarError):
        return f"broken tar archive: {error}"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot read: {error.strerror}"
    return f"cannot read: {error}"
