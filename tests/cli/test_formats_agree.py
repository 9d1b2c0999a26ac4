"""`triage --format json|text|markdown` on the seed's logs say the same things: the same
failures, the same failing tests, the same fix; the terminal view is plain text wrapped to the
terminal, coloured only on a terminal that takes colour."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
from helpers import EXAMPLES, ROOT
from markdown_it import MarkdownIt
from markdown_it.token import Token

from triage_bot.cli import cli_triage
from triage_bot.cli.cli import main
from triage_bot.core import sources
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.report import Report, build_report
from triage_bot.core.terminal import render_text

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@cache
def seed_report() -> Report:
    compiled = CompiledCatalog(cli_triage.load([]))
    jobs = [cli_triage._triage_one(job, compiled, None) for job in sources.collect([str(EXAMPLES)])]
    return build_report([job for job in jobs if job is not None])


def printed(capsys: pytest.CaptureFixture[str], output_format: str) -> str:
    assert main(["triage", str(EXAMPLES), "--format", output_format]) == 0
    return capsys.readouterr().out


def plain(markdown: str) -> str:
    """What a reader sees of `markdown`: its text, inline code and code blocks, without markup
    (entities and escapes decoded), one space for any run of whitespace."""
    words: list[str] = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block"):
            words.append(token.content)
        elif token.type == "inline":
            words.append("".join(_inline_text(child) for child in token.children or []))
    return squeezed(" ".join(words))


def _inline_text(token: Token) -> str:
    if token.type in ("text", "code_inline"):
        return token.content
    return " " if token.type in ("softbreak", "hardbreak") else ""


def squeezed(text: str) -> str:
    return " ".join(text.split())


def test_json_text_and_markdown_name_the_same_failures_tests_and_fixes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data: dict[str, Any] = json.loads(printed(capsys, "json"))
    text, markdown = printed(capsys, "text"), printed(capsys, "markdown")
    seen_text, seen_markdown = squeezed(text), plain(markdown)
    groups = data["groups"]
    assert len(groups) == 3
    # The text view names the failures in the JSON's order, numbered, by title and id.
    headings = re.findall(r"^== \d+\. (.+?) \[([a-z0-9-]+),", text, re.M)
    assert headings == [(g["title"], g["signature"]) for g in groups]
    tests_seen = 0
    for group in groups:
        assert group["title"] in seen_markdown
        assert squeezed(plain(group["summary"])) in seen_text
        assert plain(group["summary"]) in seen_markdown
        for values in group["variants"].values():
            if len(values) > 1:  # one value is the evidence line's own
                tests_seen += len(values)
                for value in values:
                    assert value in seen_text and value in seen_markdown
        # The fix, paragraph by paragraph and code line by code line, in both.
        for piece in _fix_pieces(group["fix"]):
            assert piece in seen_text, piece
            assert piece in seen_markdown, piece
    assert tests_seen == 7  # the seed's seven failing tests of one TypeError
    assert "**" not in text and "```" not in text and "&lt;" not in text and "<code>" not in text


def _fix_pieces(fix_markdown: str) -> list[str]:
    """The fix's paragraphs, list items and code lines as a reader sees them."""
    pieces = []
    for token in MarkdownIt("commonmark").parse(fix_markdown):
        if token.type in ("fence", "code_block"):
            pieces += [squeezed(line) for line in token.content.splitlines() if line.strip()]
        elif token.type == "inline":
            pieces.append(squeezed("".join(_inline_text(c) for c in token.children or [])))
    assert pieces
    return pieces


def test_json_groups_carry_the_comments_words() -> None:
    data = cli_triage.report_data(seed_report(), explain=False)
    by_id = {g["signature"]: g for g in data["groups"]}
    kwarg = by_id["python-unexpected-keyword-argument"]
    assert "`KVTransferTensors.__init__`" in kwarg["summary"] and "block_regions" in kwarg["fix"]
    assert kwarg["reason"].startswith("specific error above the wrapper")
    assert len(kwarg["variants"]["test"]) == 7
    [job] = [j for j in data["jobs"] if j["name"] == "unit-tests-mi350x"]
    root = job["root_cause"]
    assert (root["summary"], root["fix"], root["variants"]) == (
        kwarg["summary"],
        kwarg["fix"],
        kwarg["variants"],
    )
    # The keys the accuracy bench and eval/score.py read are where they were.
    assert {"line", "text", "signature"} <= set(root) and "also" in job
    assert "fallback_lines" in job


@pytest.mark.parametrize("width", [40, 72, 120])
def test_the_text_view_wraps_to_the_width_and_loses_nothing(width: int) -> None:
    report = seed_report()
    wrapped = render_text(report, width)
    assert max(len(line) for line in wrapped.splitlines()) <= width
    unwrapped = render_text(report)
    assert max(len(line) for line in unwrapped.splitlines()) > 120  # a pipe gets whole lines
    # Wrapping moves words to new lines and indents them; it drops none.
    assert squeezed(wrapped.replace("| ", "")).replace(" ", "") == squeezed(
        unwrapped.replace("| ", "")
    ).replace(" ", "")


def test_colour_only_when_asked_for() -> None:
    report = seed_report()
    coloured = render_text(report, 100, "truecolor")
    assert _ANSI.search(coloured)
    assert "\x1b" not in render_text(report, 100)
    assert squeezed(_ANSI.sub("", coloured)) == squeezed(render_text(report, 100))


def _without_colour_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}


def _on_a_terminal(env: dict[str, str]) -> str:
    """`triage` of one seed log with its standard output on a pseudo-terminal."""
    leader, follower = pty.openpty()
    log = str(EXAMPLES / "unit-tests-mi350x.log")
    with subprocess.Popen(
        [sys.executable, "-m", "triage_bot", "triage", log],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**_without_colour_settings(), "TERM": "xterm-256color", "COLUMNS": "64", **env},
    ) as process:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=120) == 0
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_the_wrapped_coloured_view_and_no_color_keeps_it_plain() -> None:
    coloured = _on_a_terminal({})
    assert _ANSI.search(coloured) and "Unexpected keyword argument" in coloured
    assert max(len(_ANSI.sub("", line)) for line in coloured.splitlines()) <= 64
    no_color = _on_a_terminal({"NO_COLOR": "1"})
    assert "\x1b" not in no_color and "Unexpected keyword argument" in no_color
    assert max(len(line) for line in no_color.splitlines()) <= 64
