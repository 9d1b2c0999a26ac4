"""Issue #12 item 2: the evidence around a test or compiler failure holds the lines its fix
talks about (Jest's Expected/Received, Go's `x_test.go:NN:` lines, pytest's `E` lines and
`file.py:NN:` line, the compiler error above Gradle's or Maven's report).

Each case is a real log window triaged with the built-in catalog: a signature's own `.log`
under patterns/, a window of tests/accuracy/, or an excerpt under tests/core/evidence_logs/;
each names its source in its `#! source:` line. The `#!` lines are dropped before triage, as
they are no part of the real log (and would take room in the window).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_log

from triage_bot.core.classify_results import Match

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = ROOT / "patterns"
ACCURACY = ROOT / "tests" / "accuracy"
EXCERPTS = Path(__file__).resolve().parent / "evidence_logs"

# The comment's first screen matters (issue #12 item 1): no window may grow past this.
MOST_EVIDENCE_LINES = 16

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
GO_TEST_MESSAGE = re.compile(r"^\s*\w+_test\.go:\d+: ")
PYTEST_PLACE = re.compile(r"^\S+\.py:\d+: \w+")


def real_log(path: Path) -> str:
    """The log without the window's `#!` annotation lines."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[0].startswith("#! source: "), path
    return "".join(line for line in lines if not line.startswith("#!"))


def evidence(match: Match) -> list[str]:
    return [*match.before, match.text, *match.after]


def root_of(path: Path) -> Match:
    root = run_log(real_log(path)).root_cause
    assert root is not None, path
    assert len(evidence(root)) <= MOST_EVIDENCE_LINES, path
    return root


def holds(lines: list[str], pattern: str) -> bool:
    return any(re.search(pattern, line) for line in lines)


JEST_LOGS = [
    PATTERNS / "node" / "node-jest-test-failed.log",
    PATTERNS / "node" / "node-jest-suite-failed.log",
    ACCURACY / "javascript" / "jest-tobe-jenkins-eui.log",
    ACCURACY / "javascript" / "jest-tobe-summary-of-failing.log",
]


@pytest.mark.parametrize("path", JEST_LOGS, ids=lambda p: p.stem)
def test_jest_evidence_holds_the_matcher_expected_and_received(path: Path) -> None:
    root = root_of(path)
    assert root.signature.id == "node-jest-test-failed"
    assert root.text.lstrip().startswith("● ")
    lines = evidence(root)
    assert holds(lines, r"expect\(received\)\.to\w+\(")
    assert holds(lines, r"^\s*Expected: ")
    assert holds(lines, r"^\s*Received: ")


# Messages below the --- FAIL line (plain `go test`, old `-v`) and above it (Go 1.14+ `-v`
# streams them, and a subtest's parent --- FAIL line comes between).
GO_LOGS = [
    PATTERNS / "go" / "go-test-fail.log",
    ACCURACY / "go" / "go-subtest-verbose-outoforder.log",
    ACCURACY / "go" / "go-subtest-vim-go.log",
    ACCURACY / "go" / "go-subtest-nested-gotestsum.log",
]


@pytest.mark.parametrize("path", GO_LOGS, ids=lambda p: p.stem)
def test_go_evidence_holds_the_test_file_lines(path: Path) -> None:
    root = root_of(path)
    assert root.signature.id == "go-test-fail"
    assert root.text.lstrip().startswith("--- FAIL: ")
    assert any(GO_TEST_MESSAGE.match(line) for line in evidence(root))


def e_block(path: Path, key: str) -> list[str]:
    """The `E` lines pytest printed for the failure whose first assertion line is `key`."""
    lines = [ANSI.sub("", line).rstrip("\r\n") for line in real_log(path).splitlines()]
    start = lines.index(key)
    end = start
    while end + 1 < len(lines) and lines[end + 1].startswith("E "):
        end += 1
    return lines[start : end + 1]


PYTEST_LOGS = [
    PATTERNS / "python" / "python-pytest-assertion-failed.log",
    ACCURACY / "python" / "pytest-assert.log",
    # Three `E` lines: the `file.py:NN:` line comes 4 lines below the key line.
    EXCERPTS / "pytest-three-e-lines.log",
]


@pytest.mark.parametrize("path", PYTEST_LOGS, ids=lambda p: p.stem)
def test_pytest_evidence_holds_the_e_lines_and_the_failing_place(path: Path) -> None:
    root = root_of(path)
    assert root.signature.id == "python-pytest-assertion-failed"
    lines = evidence(root)
    block = e_block(path, root.text)
    assert [line for line in lines if line in block] == block
    assert holds(root.before, r"^>\s")  # the assertion's source line
    assert any(PYTEST_PLACE.match(line) for line in root.after)


# An exception raised inside a test: pytest prints it as an `E` line, a blank line, then
# `file.py:NN: ErrorName`; the signatures of Python's exceptions match that `E` line.
PYTEST_RAISED = [
    (PATTERNS / "python" / "python-missing-positional-argument.log", "TypeError"),
    (PATTERNS / "python" / "python-uncaught-error.log", "ValueError"),
    (PATTERNS / "python" / "python-uncaught-exception.log", "Exception"),
]


@pytest.mark.parametrize(("path", "error"), PYTEST_RAISED, ids=lambda p: getattr(p, "stem", p))
def test_pytest_raised_error_evidence_holds_the_failing_place(path: Path, error: str) -> None:
    root = root_of(path)
    assert root.text.startswith("E ") and error in root.text
    assert holds(root.before, r"^>\s")
    assert any(PYTEST_PLACE.match(line) and line.endswith(f": {error}") for line in root.after)


@dataclass(frozen=True)
class CompileCase:
    path: Path
    compiler: str  # the signature of the compiler's error line
    report: str  # a signature of the build tool's report below it
    error_line: str  # what the compiler's line holds


COMPILE_CASES = [
    # Gradle: javac's `File.java:79: error:` above `FAILURE: Build failed` and `Execution failed`.
    CompileCase(
        PATTERNS / "java" / "java-javac-error.log",
        "java-javac-error",
        "java-gradle-task-failed",
        r"\.java:\d+: error: ",
    ),
    # Gradle: kotlinc's `e: File.kt: (2, 8): ...` above the same report.
    CompileCase(
        ACCURACY / "kotlin" / "kotlin-compile-release.log",
        "kotlin-compile-error",
        "java-gradle-task-failed",
        r"^e: \S.*\.kt",
    ),
    # Maven: `[ERROR] File.java:[42,41] error:` above `BUILD FAILURE` and `Failed to execute goal`.
    CompileCase(
        PATTERNS / "java" / "java-maven-compile-error.log",
        "java-maven-compile-error",
        "java-maven-goal-failed",
        r"\.java:\[\d+,\d+\] ",
    ),
]


@pytest.mark.parametrize("case", COMPILE_CASES, ids=lambda c: c.path.stem)
def test_compiler_error_is_the_evidence_not_the_build_tools_report(case: CompileCase) -> None:
    result = run_log(real_log(case.path))
    root = result.root_cause
    assert root is not None
    assert root.signature.id == case.compiler
    assert re.search(case.error_line, root.text)
    assert len(evidence(root)) <= MOST_EVIDENCE_LINES
    # The report was read and stood back: it is listed, below the compiler's error.
    reports = [m for m in result.also if m.signature.id == case.report]
    assert reports and all(m.line > root.line for m in reports)
