"""Issue #12 item 2, Go's `_test.go:NN:` lines: a `--- FAIL: TestX` line (go-test-fail) shows
the message TestX printed under its own `=== RUN`/`=== CONT`/`=== NAME` header, however far
above (parallel tests in between, a long message), not the lines around the `--- FAIL` line.

The logs are real (tests/core/go_logs/, each naming its source in its `#! source:` line). What
the evidence must hold is read from each log by a plain scan, not written down.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import run_log

from triage_bot.core import go_test_output
from triage_bot.core.classify_results import Match
from triage_bot.core.go_test_output import GoTestOutput
from triage_bot.core.logs import normalise
from triage_bot.core.render import render_comment
from triage_bot.core.report import Job, build_report

LOGS = Path(__file__).resolve().parent / "go_logs"
MESSAGE = re.compile(r"^\s+\S+_test\.go:\d+: ")


def real_log(name: str) -> list[str]:
    lines = (LOGS / name).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#! source: ")
    return [normalise(line.encode())[1] for line in lines[1:]]


def failed_match(lines: list[str], test: str) -> Match:
    result = run_log("\n".join(lines) + "\n")
    [match] = [
        m
        for m in result.matches
        if m.signature.id == "go-test-fail" and m.captures.get("test") == test
    ]
    return match


def test_a_parallel_test_shows_its_own_message_from_far_above() -> None:
    lines = real_log("terraform-parallel-tamper.log")
    test = "TestProviderTampering/cache_dir_totally_gone"
    match = failed_match(lines, test)
    # The plain scan: the message under the test's last header before its message.
    header = max(i for i, line in enumerate(lines) if line.startswith(f"=== CONT  {test}"))
    at = next(i for i in range(header, len(lines)) if MESSAGE.match(lines[i]))
    fail = next(i for i, line in enumerate(lines) if line.strip().startswith(f"--- FAIL: {test}"))
    assert fail - at > 8  # out of the signature's own window (8 lines before)
    window = match.evidence
    assert (window.line, window.text) == (at + 1, lines[at])
    assert "Error: Failed to install provider" in "\n".join(window.after)
    assert not any(line.startswith("===") for line in window.after)  # the next test's lines
    assert window.after and window.after[-1].strip()


def test_a_log_line_before_the_error_is_passed_over_for_the_error() -> None:
    lines = real_log("mongodbatlas-step-error.log")
    match = failed_match(lines, "TestMigCloudUserProjectAssignmentRS_basic")
    messages = [i for i, line in enumerate(lines) if MESSAGE.match(line)]
    assert len(messages) == 2 and "Creating execution project" in lines[messages[0]]
    window = match.evidence
    assert (window.line, window.text) == (messages[1] + 1, lines[messages[1]])
    assert "Error: error creating project" in "\n".join(window.after)
    assert len(window.after) <= go_test_output.CONTINUATION
    assert window.after[-1].strip()  # never ends on a blank line


@pytest.mark.parametrize("name", ["terraform-parallel-tamper.log", "mongodbatlas-step-error.log"])
def test_the_comment_shows_the_message(name: str) -> None:
    lines = real_log(name)
    result = run_log("\n".join(lines) + "\n")
    body = render_comment(build_report([Job(result)]))
    root = result.root_cause
    assert root is not None and root.explanation is not None
    assert root.explanation.text.strip() in body


def test_memory_is_bounded_and_a_test_without_a_message_gets_none() -> None:
    output = GoTestOutput()
    for n in range(go_test_output.MAX_TESTS + 50):
        assert output.header(f"=== RUN   TestCase{n}")
        output.message(n, f"    case_test.go:{n}: got {n}, want 0: mismatch error", lambda _n: [])
    kept = [output.window_for(f"--- FAIL: TestCase{n} (0.00s)") for n in range(200)]
    assert sum(window is not None for window in kept) == go_test_output.MAX_TESTS
    assert output.window_for("--- FAIL: TestNeverPrinted (0.01s)") is None
    assert output.window_for("--- PASS: TestCase1 (0.00s)") is None
