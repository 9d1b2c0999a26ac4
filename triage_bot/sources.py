"""Job logs from the command line: files, folders of job logs, zip archives, gzip, stdin.

Each file is one job, named by its file name without the `.log`/`.txt` ending. A zip archive
(GitHub's "download log archive") gives one job per text member. Logs are read in 1 MiB chunks
so that a log of any size streams through the classifier in bounded memory.
"""

from __future__ import annotations

import gzip
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
_LOG_SUFFIXES = (".log", ".txt")


class InputError(Exception):
    """Input the triage cannot use, with a message for the person who gave it."""


@dataclass(frozen=True)
class JobLog:
    name: str
    open: Callable[[], BinaryIO]


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    with stream:
        while chunk := stream.read(size):
            yield chunk


def job_name(path: Path | str) -> str:
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in _LOG_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def collect(arguments: list[str]) -> list[JobLog]:
    """The job logs that the command line names, in the order given (folders sorted)."""
    jobs: list[JobLog] = []
    for argument in arguments:
        if argument == "-":
            jobs.append(JobLog("stdin", lambda: sys.stdin.buffer))
            continue
        path = Path(argument)
        if path.is_dir():
            found = _folder(path)
            if not found:
                raise InputError(f"{argument}: folder holds no log files")
            jobs.extend(found)
        elif path.is_file():
            jobs.extend(_file(path))
        elif path.exists():
            raise InputError(f"{argument}: not a regular file or folder")
        else:
            raise InputError(f"{argument}: no such file or folder")
    return jobs


def _folder(folder: Path) -> list[JobLog]:
    jobs: list[JobLog] = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not any(
            part.startswith(".") for part in path.relative_to(folder).parts
        ):
            jobs.extend(_file(path))
    return jobs


def _file(path: Path) -> list[JobLog]:
    if zipfile.is_zipfile(path):
        return _zip_members(path)
    if path.name.endswith(".gz"):
        return [JobLog(job_name(path), lambda: gzip.open(path, "rb"))]  # type: ignore[arg-type,return-value]
    return [JobLog(job_name(path), lambda: path.open("rb", buffering=0))]


def _zip_members(path: Path) -> list[JobLog]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InputError(f"{path}: broken zip archive: {exc}") from exc
    members = [m for m in archive.namelist() if not m.endswith("/")]
    return [JobLog(job_name(m), _opener(archive, m)) for m in sorted(members)]


def _opener(archive: zipfile.ZipFile, member: str) -> Callable[[], BinaryIO]:
    return lambda: archive.open(member)  # type: ignore[return-value]
