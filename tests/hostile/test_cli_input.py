"""`triage-bot triage PATH...` on the files people really have: broken archives, compressed
logs without their extension, CI artifacts with READMEs and screenshots beside the logs,
GitHub's log archive, the same job name twice, and logs far larger than the byte cap.
A real process each time, as a person runs it."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from helpers import ROOT

FAILURE = "ModuleNotFoundError: No module named 'widgets.core'"
SIGNATURE = "python-module-not-found"


def log_failing_at(line: int, total: int, width: int = 60) -> bytes:
    """`total` lines of output whose line `line` (1-based) is the failure."""
    lines = [
        f"2026-10-21T09:12:33.1234567Z output {n:06d} ".ljust(width, "x") for n in range(total)
    ]
    lines[line - 1] = f"2026-10-21T09:12:33.1234567Z {FAILURE}"
    return ("\n".join(lines) + "\n").encode()


LOG = log_failing_at(40, 50)


def triage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", "triage", *args, "--format", "json"],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=ROOT,
        env=os.environ.copy(),
        timeout=120,
        check=False,
    )


def jobs_of(done: subprocess.CompletedProcess[bytes]) -> dict[str, dict[str, Any]]:
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return {job["name"]: job for job in json.loads(done.stdout)["jobs"]}


def notes(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    return done.stderr.decode().splitlines()


def root_line(job: dict[str, Any]) -> int:
    assert job["root_cause"]["signature"] == SIGNATURE, job
    line: int = job["root_cause"]["line"]
    return line


def zip_with(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def tar_with(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


# ---- broken archives ------------------------------------------------------------------------


def bad_crc_zip(path: Path) -> Path:
    """A zip whose one member's stored bytes were changed after its CRC was written."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("unit.txt", LOG)
    data = bytearray(path.read_bytes())
    at = data.index(b"output 000010")
    data[at] ^= 0x20  # 'o' -> 'O': same length, another CRC
    path.write_bytes(bytes(data))
    return path


def test_broken_archives_are_one_line_each_and_the_rest_of_the_folder_is_triaged(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (folder / "good.log").write_bytes(LOG)
    whole = gzip.compress(log_failing_at(900, 1000))
    (folder / "truncated.log.gz").write_bytes(whole[: len(whole) // 2])
    bad_crc_zip(folder / "crc.zip")
    (folder / "notzip.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 40)  # a zip's start, no more
    tar_with(folder / "more.tar.gz", {"lint.log": LOG})

    done = triage(str(folder))

    jobs = jobs_of(done)
    assert sorted(jobs) == ["good", "lint"]
    assert all(root_line(job) == 40 for job in jobs.values())
    said = notes(done)
    assert len(said) == 3, said  # one line per broken file, nothing else
    by_file = {line.split(": ")[1].rsplit("/", 1)[-1]: line for line in said}
    assert "truncated" in by_file["truncated.log.gz"]
    assert "Bad CRC-32" in by_file["crc.zip:unit.txt"]
    assert "broken zip archive" in by_file["notzip.zip"]
    assert all(line.startswith("triage-bot: ") for line in said)


def test_nothing_readable_exits_2_with_each_reason(tmp_path: Path) -> None:
    whole = gzip.compress(LOG)
    truncated = tmp_path / "run.log.gz"
    truncated.write_bytes(whole[:-20])
    done = triage(str(truncated), str(tmp_path / "missing.log"))
    assert done.returncode == 2 and done.stdout == b""
    said = notes(done)
    assert len(said) == 3 and said[-1] == "triage-bot: no log could be read"
    assert any("run.log.gz: truncated" in line for line in said)
    assert any("missing.log: no such file or folder" in line for line in said)


# ---- compressed, by content -----------------------------------------------------------------


def test_compressed_logs_are_told_by_their_content_not_their_name(tmp_path: Path) -> None:
    (tmp_path / "gz-no-extension").write_bytes(gzip.compress(LOG))
    (tmp_path / "bzipped.log").write_bytes(bz2.compress(LOG))  # a .log that is bzip2
    (tmp_path / "xz.txt").write_bytes(lzma.compress(LOG))
    tar_with(tmp_path / "logs.tgz", {"run/unit.log": LOG, "run/e2e.log": LOG})
    tar_with(tmp_path / "plain.tar", {"integration.txt": LOG}, mode="w")
    zip_with(tmp_path / "artifact.zip", {"shards/shard-1.log.gz": gzip.compress(LOG)})

    jobs = jobs_of(triage(str(tmp_path)))

    assert sorted(jobs) == [
        "bzipped",
        "e2e",
        "gz-no-extension",
        "integration",
        "shard-1",
        "unit",
        "xz",
    ]
    assert all(root_line(job) == 40 for job in jobs.values())


def test_gzip_and_zip_on_stdin(tmp_path: Path) -> None:
    from_gzip = jobs_of(triage("-", stdin=gzip.compress(LOG)))
    assert list(from_gzip) == ["stdin"] and root_line(from_gzip["stdin"]) == 40
    archive = zip_with(tmp_path / "a.zip", {"build.txt": LOG, "test.txt": LOG})
    from_zip = jobs_of(triage("-", stdin=archive.read_bytes()))
    assert sorted(from_zip) == ["build", "test"]
    plain = jobs_of(triage("-", stdin=LOG))
    assert root_line(plain["stdin"]) == 40


# ---- what is not a log ----------------------------------------------------------------------


def test_empty_binary_and_document_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "build.log").write_bytes(LOG)
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "core.dump").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8)
    (tmp_path / "noise.bin").write_bytes(bytes(range(1, 32)) * 64)  # control bytes, no NUL
    (tmp_path / "README.md").write_text("# Artifacts\n\nerror: see the logs\n", encoding="utf-8")
    (tmp_path / "screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (tmp_path / "utf16.log").write_bytes(LOG.decode().encode("utf-16"))
    (tmp_path / ".hidden.log").write_bytes(LOG)

    done = triage(str(tmp_path))

    assert list(jobs_of(done)) == ["build"]
    said = {line.split(": ")[1].rsplit("/", 1)[-1]: line for line in notes(done)}
    assert sorted(said) == [
        "README.md",
        "core.dump",
        "empty.log",
        "noise.bin",
        "screenshot.png",
        "utf16.log",
    ]
    assert "empty file" in said["empty.log"]
    assert "binary" in said["core.dump"] and "binary" in said["noise.bin"]
    assert "UTF-16" in said["utf16.log"]
    assert "not a log" in said["README.md"] and "not a log" in said["screenshot.png"]


def test_a_document_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    notes_file = tmp_path / "NOTES.md"
    notes_file.write_bytes(LOG)
    assert root_line(jobs_of(triage(str(notes_file)))["NOTES.md"]) == 40


def test_a_folder_of_nothing_but_skipped_files_exits_2(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "README").write_text("logs below\n", encoding="utf-8")
    done = triage(str(tmp_path))
    assert done.returncode == 2 and b"no log could be read" in done.stderr
    assert b"empty file" in done.stderr and b"README: skipped" in done.stderr


# ---- GitHub's log archive -------------------------------------------------------------------


def github_log_archive(path: Path) -> Path:
    """The layout of "Download log archive": `N_job.txt` (the whole job's log) at the top,
    and `job/N_step.txt` per step. Job `lint` lost its own file: only its steps are there."""
    build_steps = [b"setup line\n" * 3, LOG]
    lint_steps = [b"set up\n" * 10, log_failing_at(5, 8)]
    return zip_with(
        path,
        {
            "0_build (3.11).txt": b"".join(build_steps),
            "build (3.11)/1_Set up job.txt": build_steps[0],
            "build (3.11)/2_Run tests.txt": build_steps[1],
            "1_docs.txt": b"building docs\nok\n",
            "docs/1_Set up job.txt": b"building docs\n",
            "docs/2_Build.txt": b"ok\n",
            "lint/2_Run ruff.txt": lint_steps[1],
            "lint/1_Set up job.txt": lint_steps[0],
        },
    )


def test_githubs_log_archive_is_one_job_per_job_file(tmp_path: Path) -> None:
    jobs = jobs_of(triage(str(github_log_archive(tmp_path / "logs_1234.zip"))))

    assert list(jobs) == ["build (3.11)", "docs", "lint"]  # not one job per step file
    assert root_line(jobs["build (3.11)"]) == 43  # 3 setup lines, then the failure's 40th
    assert jobs["docs"]["root_cause"] is None
    assert root_line(jobs["lint"]) == 15  # its steps in order: 10 lines, then line 5


# ---- the same name twice --------------------------------------------------------------------


def test_jobs_of_the_same_name_are_told_apart(tmp_path: Path) -> None:
    for folder in ("linux", "macos"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "build.log").write_bytes(LOG)
    (tmp_path / "linux" / "test.log").write_bytes(LOG)
    once = tmp_path / "linux" / "test.log"

    by_folder = jobs_of(triage(str(tmp_path)))
    twice = jobs_of(triage(str(once), str(once)))
    archives = jobs_of(
        triage(
            str(github_log_archive(tmp_path / "logs_1.zip")),
            str(github_log_archive(tmp_path / "logs_2.zip")),
        )
    )

    assert sorted(by_folder) == ["linux/build", "macos/build", "test"]
    assert list(twice) == ["test", "test (2)"]
    assert "logs_1/lint" in archives and "logs_2/lint" in archives and len(archives) == 6


# ---- the byte cap keeps the tail ------------------------------------------------------------


def test_max_bytes_keeps_the_tail_with_the_real_line_numbers(tmp_path: Path) -> None:
    big = log_failing_at(4990, 5000)  # ~300 KB; the failure 10 lines before the end
    path = tmp_path / "big.log"
    path.write_bytes(big)
    (tmp_path / "big.gz").write_bytes(gzip.compress(big))

    from_file = jobs_of(triage(str(path), "--max-bytes", "1KiB"))["big"]
    from_gzip = jobs_of(triage(str(tmp_path / "big.gz"), "--max-bytes", "1k"))["big"]
    from_stdin = jobs_of(triage("-", "--max-bytes", "1024", stdin=big))["stdin"]

    for job in (from_file, from_gzip, from_stdin):
        assert root_line(job) == 4990
        assert job["truncated"] and 0 < job["bytes"] <= 1024
        # The tail starts at a line start: the evidence before the failure is whole lines.
        before = job["root_cause"]["before"]
        assert before and all(line.startswith("output ") for line in before)
    whole = jobs_of(triage(str(path), "--max-bytes", "1MiB"))["big"]
    assert root_line(whole) == 4990 and not whole["truncated"]


def test_max_bytes_says_what_it_wants(tmp_path: Path) -> None:
    for bad in ("lots", "0", "-5", "1.5M"):
        done = triage(str(tmp_path), "--max-bytes", bad)
        assert done.returncode == 2 and b"not a size like" in done.stderr, bad
