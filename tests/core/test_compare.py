"""core/compare.py: run-to-run noise is blanked, meaning is kept, memory is bounded."""

from __future__ import annotations

import pytest

from triage_bot.core.compare import PassingFile, normalise


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


def test_lines_asked_together_get_the_answers_they_get_alone() -> None:
    # The classifier asks about its lines at once, normalised as one text: a line must not
    # run into the next (a count at the end of one line and a unit at the start of the next
    # once read as one duration).
    log = b"retrying request 5\nmin retries reached\nok\n"
    passing = PassingFile(lambda: [log])
    asked = ["retrying request 5", "min retries reached", "retrying request 6", "ok", ""]
    assert passing.has_many(asked) == [passing.has_many([text])[0] for text in asked]
    assert passing.has_many(asked) == [True, True, False, False, False]  # `ok`: too short
