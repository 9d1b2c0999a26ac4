"""core/compare.py: run-to-run noise is blanked, meaning is kept, memory is bounded."""

from __future__ import annotations

import pytest

from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import CompiledCatalog, read_passing
from triage_bot.core.compare import PassingLog, normalise


@pytest.mark.parametrize(
    ("one_run", "another_run"),
    [
        (
            "2024-05-01T10:00:00.1234567Z Downloading numpy (15.2 MB)",
            "2024-05-02T11:22:33.7654321Z Downloading numpy (15.3 MB)",
        ),
        ("Ran 120 tests in 3.412s", "Ran 120 tests in 2.9s"),
        ("HEAD is now at 9306968c fix", "HEAD is now at a07b5907 fix"),
        (
            "wrote /tmp/pytest-of-runner/pytest-3/x.txt",
            "wrote /tmp/pytest-of-runner/pytest-9/x.txt",
        ),
        ("listening on 127.0.0.1:43121", "listening on 127.0.0.1:38800"),
        ("worker pid 4412 started", "worker pid 977 started"),
        ("\x1b[32m[ 45%]\x1b[0m Building CXX object a.o", "[ 61%] Building CXX object a.o"),
        (
            "Receiving objects:  12% (1/8)\rReceiving objects: 100% (8/8), done.",
            "Receiving objects: 100% (9/9), done.",
        ),
        ("    indented   with\ttabs ", "indented with tabs"),
    ],
)
def test_what_differs_between_two_runs_of_a_job_is_blanked(one_run: str, another_run: str) -> None:
    assert normalise(one_run) == normalise(another_run)


@pytest.mark.parametrize(
    ("passing", "failing"),
    [
        ("Tests run: 5, Failures: 0, Errors: 0", "Tests run: 5, Failures: 1, Errors: 0"),
        ("exit code 0", "exit code 1"),
        ("test_login PASSED", "test_login FAILED"),
        ('File "app.py", line 44', 'File "app.py", line 45'),
    ],
)
def test_what_says_something_about_the_failure_is_kept(passing: str, failing: str) -> None:
    assert normalise(passing) != normalise(failing)


def test_a_passing_log_fed_in_pieces_knows_its_lines_and_no_others() -> None:
    log = (
        b"2024-05-01T10:00:00.0000001Z warning: deprecated API\n"
        b"2024-05-01T10:00:01.0000001Z Ran 3 tests in 0.5s\r\n"
        b"OK"  # no final newline
    )
    passing = PassingLog()
    for at in range(0, len(log), 7):  # chunks cut mid-line
        passing.feed(log[at : at + 7])
    passing.finish()

    assert passing.lines == 3 and passing.distinct == 3
    assert passing.has("warning: deprecated API")  # as the classifier reports it
    assert passing.has("2026-01-01T00:00:00.0000001Z Ran 3 tests in 9.1s")
    assert passing.has("OK")
    assert not passing.has("error: deprecated API")
    assert not passing.has("Ran 4 tests in 0.5s")


def test_distinct_lines_past_the_cap_are_dropped_and_count_as_new() -> None:
    passing = PassingLog(max_lines=1000)
    passing.feed(b"".join(b"line number %d\n" % n for n in range(5000)))
    passing.finish()

    assert passing.lines == 5000 and passing.distinct == 1000 and passing.truncated
    kept = sum(passing.has(f"line number {n}") for n in range(5000))
    assert kept == 1000  # the rest reads as new: shown, never hidden


def test_an_empty_passing_log_holds_nothing() -> None:
    passing = PassingLog.from_chunks([])
    assert passing.lines == 0 and not passing.has("") and not passing.has("anything")


def test_batches_merge_into_one_sorted_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small batches, lines repeated across them: each merge adds only what is not known.
    monkeypatch.setattr("triage_bot.core.compare.BATCH_LINES", 64)
    passing = PassingLog(max_lines=700)
    for start in range(0, 1000, 100):
        passing.feed(b"".join(b"line %d\n" % (n % 600) for n in range(start, start + 100)))
    passing.finish()
    assert passing.distinct == 600 and not passing.truncated
    assert all(passing.has(f"line {n}") for n in range(600))
    # Past the cap mid-batch: what was known stays, part of the batch fills the room.
    passing.feed(b"".join(b"other %d\n" % n for n in range(300)))
    passing.finish()
    assert passing.distinct == 700 and passing.truncated
    assert all(passing.has(f"line {n}") for n in range(600))
    assert sum(passing.has(f"other {n}") for n in range(300)) == 100


def test_lines_asked_together_get_the_answers_they_get_alone() -> None:
    # The classifier asks about its candidate lines a batch at a time, normalised as one
    # text: a line must not run into the next (a count at the end of one line and a unit
    # at the start of the next once read as one duration).
    passing = PassingLog.from_chunks([b"retrying request 5\nmin retries reached\nok\n"])
    asked = ["retrying request 5", "min retries reached", "retrying request 6", "ok", ""]
    assert passing.has_many(asked) == [passing.has(text) for text in asked]
    assert passing.has_many(asked) == [True, True, False, True, False]


def test_a_passing_log_keeps_only_the_lines_the_classifier_may_ask_about() -> None:
    # Kept: a line a signature matches, or one whose error word makes it a best guess. Not
    # kept: a line that only holds a signature's trigger (`--- `, ` - `, `1) ` are common)
    # or an error word in an exit-status line: each would cost its normalising, and the
    # classifier never asks about them.
    asked = [b"--- FAIL: TestLogin (0.01s)", b"Something failed badly here", b"fatal error: a.h"]
    never_asked = [
        b"--- Summary of the build ---",
        b" - installing foo",
        b"npm ERR! code ELIFECYCLE",
    ]
    catalog = CompiledCatalog(load_catalog())
    passing = read_passing([b"\n".join(asked + never_asked) + b"\n"], catalog)
    assert [passing.has(line.decode()) for line in asked] == [True] * 3
    assert [passing.has(line.decode()) for line in never_asked] == [False] * 3
