"""`triage-bot report` on hostile recorded lines (a line is whatever a job printed): the HTML
runs nothing and links nowhere but https, the proposed shell command runs nothing of the
line, the terminal gets no control character, and a line `catalog new` would refuse gets no
command but a reason."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from triage_bot.cli.cli import main
from triage_bot.store.job_outcomes import JobOutcome, line_key
from triage_bot.store.store import Store

NOW = datetime.now(UTC).replace(microsecond=0)
BIN = Path(sys.executable).parent
SHELL_LINE = 'error: it\'s $(touch pwned1) `touch pwned2`; touch pwned3 && echo "$HOME"'
HTML_LINE = 'error: <script>alert(1)</script> "><img src=x onerror=alert(2)>'
CONTROL_LINE = "error: \x1b]0;owned\x07 screen \x1b[2J wiped\x9b31m red"
SHEBANG_LINE = "#! match: error: a line a .log window reads as an expectation"
HOSTILE_URL = 'javascript:alert(3)//"><b>'


def _record(url: str, lines: list[tuple[str, str | None]]) -> None:
    store = Store(url)
    store.outcomes.record([
        JobOutcome(
            repo="o/r", run_id=100 + number, run_attempt=1, job_id=number, workflow="CI",
            workflow_id=1, job_name="test", job_full_name="test", conclusion="failure",
            commit_sha=f"c{number}", finished_at=NOW, failure_key=line_key(line), url=job_url,
        )
        for number, (line, job_url) in enumerate(lines)
    ])  # fmt: skip
    store.close()


def _report(
    url: str, fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.setenv("DATABASE_URL", url)
    capsys.readouterr()
    assert main(["report", "--format", fmt]) == 0
    return capsys.readouterr().out


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hrefs += [value or "" for name, value in attrs if name == "href"]


def test_html_escapes_lines_and_links_only_https(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'triage.db'}"
    _record(url, [(HTML_LINE, HOSTILE_URL), ("error: fine", "https://github.com/o/r/job/1")])
    page = _report(url, "html", capsys, monkeypatch)
    parsed = _Tags()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "b" not in parsed.tags
    assert parsed.hrefs == ["https://github.com/o/r/job/1"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text


def test_the_proposed_command_runs_nothing_of_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'triage.db'}"
    _record(url, [(SHELL_LINE, None)])
    monkeypatch.chdir(tmp_path)
    text = _report(url, "text", capsys, monkeypatch)
    command = next(line for line in text.splitlines() if "draft:" in line).split("draft: ", 1)[1]
    work = tmp_path / "work"
    work.mkdir()
    env = os.environ | {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert not list(work.glob("pwned*"))
    (window,) = (work / ".github/triage-bot/patterns").glob("*.log")
    assert SHELL_LINE in window.read_text()  # the line itself, not what a shell made of it


def test_text_shows_no_control_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'triage.db'}"
    _record(url, [(CONTROL_LINE, None)])
    text = _report(url, "text", capsys, monkeypatch)
    assert "wiped" in text
    assert not any((ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in text)


def test_a_line_catalog_new_refuses_gets_a_reason_not_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'triage.db'}"
    _record(url, [(SHEBANG_LINE, None)])
    text = _report(url, "text", capsys, monkeypatch)
    assert "catalog new" not in text
    assert "reads as an expectation" in text
