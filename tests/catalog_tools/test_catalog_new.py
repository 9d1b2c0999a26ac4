"""`triage-bot catalog new`: drafts from real log lines pass `catalog lint` and `catalog test`
unchanged, as a user runs them (a new process, a folder of their own, the built-in catalog
competing); bad requests are refused with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import regex
import yaml
from helpers import EXAMPLES, ROOT

from catalog_tools.test_catalog_tools import make
from triage_bot.catalog_tools.catalog_new import (
    PATTERN_CHARS,
    keyword_for,
    nearby_unmatched,
    pattern_for,
)
from triage_bot.cli.cli import main
from triage_bot.core import logs

MODULE_LOG = EXAMPLES / "kimi-k3-mxfp4-1p1d-tp8-dspark7-agentic-1m-c1.log"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if needle.encode() in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def first_expectation(window: Path) -> int:
    """The line of a catalog window that its own `#! match:` checks."""
    lines = window.read_text(encoding="utf-8").split("\n")
    directive = next(i for i, line in enumerate(lines) if line.startswith("#! match:"))
    return next(i for i in range(directive, len(lines)) if not lines[i].startswith("#!")) + 1


def catalog_windows() -> list[Path]:
    """The first window of a few ecosystems."""
    return [
        sorted((ROOT / "patterns" / name).glob("*.log"))[0]
        for name in ("go", "node", "java", "docker", "cpp")
    ]


def test_drafts_from_real_logs_pass_lint_and_test_unchanged(tmp_path: Path) -> None:
    progress = tmp_path / "pip.log"
    progress.write_bytes(
        b"2026-10-21T09:00:01.0000000Z Collecting torch\n"
        b"2026-10-21T09:00:02.0000000Z   Downloading 10%\r  Downloading 100%\r"
        b"ERROR: Could not install packages due to an OSError: [Errno 28] No space left\n"
        b"2026-10-21T09:00:03.0000000Z \x1b[31merror\x1b[0m: \x1b[1mcould not compile\x1b[0m "
        b"`widget` due to previous error\r\n"
    )
    sources = [
        (MODULE_LOG, line_of(MODULE_LOG, "ModuleNotFoundError")),
        (
            EXAMPLES / "kimi-k3-mxfp4-1p1d-tp8-dcp8-agentic-lmcache-1m-c48-mesh-build.log",
            line_of(
                EXAMPLES / "kimi-k3-mxfp4-1p1d-tp8-dcp8-agentic-lmcache-1m-c48-mesh-build.log",
                "os error 24",
            ),
        ),
        (
            EXAMPLES / "unit-tests-mi350x.log",
            line_of(EXAMPLES / "unit-tests-mi350x.log", "unexpected keyword argument"),
        ),
        (progress, 2),
        (progress, 3),
        *((window, first_expectation(window)) for window in catalog_windows()),
    ]
    folder = tmp_path / "mine"
    drafted = []
    for index, (log, number) in enumerate(sources):
        ident = f"draft-{index}"
        done = cli("catalog", "new", ident, "--from-log", str(log), "--line", str(number),
                   "--dir", str(folder), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"wrote {folder / ident}.yml" in done.stdout
        drafted.append((ident, log, number))
    lint = cli("catalog", "lint", str(folder), cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout
    assert f"catalog lint: {len(sources)} signatures, 0 problems" in lint.stdout
    test = cli("catalog", "test", str(folder), cwd=tmp_path)
    assert test.returncode == 0, test.stdout
    assert ", 0 failed, 0 files not loaded" in test.stdout
    for ident, log, number in drafted:
        check_draft(folder, ident, log, number)


def check_draft(folder: Path, ident: str, log: Path, number: int) -> None:
    """The draft says what the brief says: the line as the classifier sees it, escaped."""
    data = yaml.safe_load((folder / f"{ident}.yml").read_text(encoding="utf-8"))
    raw = log.read_bytes().split(b"\n")[number - 1].removesuffix(b"\r")
    text = logs.normalise(raw)[1]
    assert data["id"] == ident and data["tests"]["match"] == [{"line": text}]
    assert regex.search(data["pattern"], text)
    assert data["pattern"].startswith(r"^\s*")
    (keyword,) = data["keywords"]
    assert keyword in text and keyword.encode() in raw  # intact in the raw bytes
    for other in data["tests"].get("no_match", []):
        assert not regex.search(data["pattern"], other)
    window = (folder / f"{ident}.log").read_bytes().decode().split("\n")
    at = window.index(f"#! match: {ident}")
    assert window[at + 1] == raw.decode("utf-8", "replace")


def test_a_line_a_built_in_wins_is_outranked_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    number = line_of(MODULE_LOG, "ModuleNotFoundError")
    args = ["catalog", "new", "aiter-missing", "--from-log", str(MODULE_LOG)]
    assert main([*args, "--line", str(number), "--dir", str(tmp_path)]) == 0
    data = yaml.safe_load((tmp_path / "aiter-missing.yml").read_text(encoding="utf-8"))
    assert data["priority"] == 61  # python-module-not-found has 60
    assert data["keywords"] == ["ModuleNotFoundError"]
    assert "python-module-not-found (priority 60" in capsys.readouterr().err
    # Written again with --force: replaced, not refused as a duplicate of itself.
    title = ["--title", "aiter's MLA decode module is gone", "--category", "dependency"]
    assert main([*args, "--line", str(number), "--dir", str(tmp_path), "--force", *title]) == 0
    data = yaml.safe_load((tmp_path / "aiter-missing.yml").read_text(encoding="utf-8"))
    assert data["title"] == "aiter's MLA decode module is gone"
    assert data["category"] == "dependency"


def test_a_draft_that_takes_a_neighbours_line_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make(tmp_path)  # a signature of the folder, whose window holds the same line
    log = tmp_path / "job.log"
    log.write_text("compiling\nwidget broke: out of gears\n", encoding="utf-8")
    argv = ["catalog", "new", "gears-gone", "--from-log", str(log), "--line", "2"]
    assert main([*argv, "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "local-widget-broke.log:2: expected the next line to match local-widget-broke" in out
    assert "got gears-gone" in out and "improve that signature instead" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "Bad_Id"}, "id 'Bad_Id' is not valid: lower-case words joined by '-'"),
        ({"id": "python-module-not-found"}, "python-module-not-found: already the id of"),
        ({"--line": "0"}, "--line 0: lines are numbered from 1"),
        ({"--line": "9999"}, "line 9999 is outside the file (69 lines)"),
        ({"--line": "BLANK"}, "is blank"),
        ({"--from-log": "missing.log"}, "missing.log: no such file or folder"),
        ({"--category": "flaky"}, "category 'flaky' is not valid: one of dependency, build"),
        ({"--title": "x"}, "title 'x' is not valid"),
        ({"exists": "yes"}, "already exists (--force replaces it)"),
    ],
)
def test_bad_requests_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, str], message: str
) -> None:
    log = tmp_path / "job.log"
    log.write_bytes(MODULE_LOG.read_bytes().replace(b"Post job cleanup.", b"   "))
    blank = line_of(log, "09:00:08.9050001Z") if change.get("--line") == "BLANK" else None
    options = {"--from-log": str(log), "--line": "62", "--dir": str(tmp_path / "out")}
    options |= {k: v for k, v in change.items() if k.startswith("--")}
    if blank is not None:
        options["--line"] = str(blank)
    if "exists" in change:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "widget-broke.log").write_text("mine\n", encoding="utf-8")
    argv = ["catalog", "new", change.get("id", "widget-broke")]
    argv += [item for pair in options.items() for item in pair]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out" / "widget-broke.yml").exists()
    if "exists" in change:
        assert (tmp_path / "out" / "widget-broke.log").read_text(encoding="utf-8") == "mine\n"


def test_pattern_is_anchored_and_cut_on_long_lines() -> None:
    assert pattern_for("  error: a.b (c)  ") == r"^\s*error: a\.b \(c\)\s*$"
    long = "FATAL " + "x" * 500
    pattern = pattern_for(long)
    assert not pattern.endswith("$") and regex.search(pattern, long)
    assert len(pattern) < PATTERN_CHARS + 20


def test_keyword_is_plain_words_intact_in_the_raw_line() -> None:
    text = "E       TypeError: KVTransferTensors.__init__() got an unexpected keyword argument 'x'"
    assert keyword_for(text, text.encode()) == "got an unexpected keyword argument"
    coloured = b"\x1b[1mToo many\x1b[0m open files (os error 24)"
    assert keyword_for("Too many open files (os error 24)", coloured) == "open files"
    assert keyword_for("block_regions=[(0, 16)],", b"block_regions=[(0, 16)],") == ("block_regions")


def test_no_match_example_prefers_a_nearby_line_holding_the_keyword() -> None:
    texts = ["setup", "ModuleNotFoundError handling", "", "ModuleNotFoundError: x", "done"]
    pattern = regex.compile(pattern_for(texts[3]))
    assert nearby_unmatched(texts, 3, pattern, "ModuleNotFoundError") == 1
    assert nearby_unmatched(texts, 3, pattern, "absent") == 4  # the line before is blank
    assert nearby_unmatched(["same", "same"], 1, regex.compile("same"), "same") is None
