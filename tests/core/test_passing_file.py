"""core/compare.PassingFile: a passing log read once the failing one is classified, for the
asked lines only; the same answers as reading every line of it (PassingLog), on every engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from triage_bot.core import engine
from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import SIFTED_HEAD, CompiledCatalog, JobClassifier
from triage_bot.core.compare import MAX_LINE_BYTES, PassingFile, PassingUnreadable


def _available_engines() -> list[str]:
    names = []
    for name in engine.engine_names():
        try:
            engine.build_prefilter([engine.Trigger(b"word")], name, persist=False)
        except ImportError:
            continue
        names.append(name)
    return names


CATALOG = CompiledCatalog(load_catalog([]))  # no signature: best guesses only
PASSING = (
    b"2024-05-01T10:00:00.0000001Z Downloading numpy (15.2 MB)\n"
    b"2024-05-01T10:00:01.0000001Z \x1b[33mwarning\x1b[0m: deprecated API `foo` in 3.4s\n"
    b"2024-05-01T10:00:02.0000001Z Receiving objects:  12% (1/8)\rReceiving objects: 100% (8/8)\n"
    b"ERROR: flaky download, retrying\tin 2s (attempt 1/3)\n"
    b"listening on 127.0.0.1:43121 as pid 4412\n"
    b"Tests run: 5, Failures: 0, Errors: 0\n"
)
ASKED = [
    "Downloading numpy (9.9 MB)",  # another size
    "warning: deprecated API `foo` in 0.2s",  # colour codes in the passing one
    "Receiving objects: 100% (9/9)",  # the last drawing of a progress line
    "ERROR: flaky download, retrying in 5s (attempt 2/3)",  # a tab there, other numbers
    "listening on 127.0.0.1:38800 as pid 977",
    "Tests run: 5, Failures: 1, Errors: 0",  # a number that means something
    "warning: deprecated API `bar` in 3.4s",  # the same words but one
    "Errors: 0",  # words of a longer line, not a line of its own
    "",
    "::",  # no word to look for
]


# The first five were printed by the passing run, once both are normalised; not the others.
PRINTED = [True] * 5 + [False] * 5


@pytest.mark.parametrize("engine_name", _available_engines())
def test_a_line_is_found_when_a_passing_line_normalises_to_it(engine_name: str) -> None:
    assert PassingFile(lambda: [PASSING], engine_name).has_many(ASKED) == PRINTED


@pytest.mark.parametrize("piece", [1, 7, 64])
def test_chunks_cut_anywhere_give_the_same_answers(piece: int) -> None:
    pieces = [PASSING[at : at + piece] for at in range(0, len(PASSING), piece)]
    assert PassingFile(lambda: pieces).has_many(ASKED) == PRINTED


def test_reading_stops_once_every_asked_line_is_found() -> None:
    read: list[int] = []

    def chunks() -> Iterator[bytes]:
        for number in range(1000):
            read.append(number)
            yield f"line {number} of the passing log\n".encode()

    assert PassingFile(chunks).has_many(["line 3 of the passing log"]) == [True]
    assert read == [0, 1, 2, 3]


def test_a_line_longer_than_read_is_cut_and_what_follows_it_is_still_read() -> None:
    long_line = b"x" * (3 * MAX_LINE_BYTES) + b" error: too long\n"
    log = [long_line[at : at + 4096] for at in range(0, len(long_line), 4096)]
    log.append(b"error: after the long line\n")
    answers = PassingFile(lambda: log).has_many(["error: too long", "error: after the long line"])
    assert answers == [False, True]  # the long line's end was never read


def test_hostile_lines_are_answered_not_raised() -> None:
    log = b"a\x00b error: nul inside\n\xff\xfe error: not utf-8\n(?:*+ error: regex syntax\n"
    asked = [
        "a\x00b error: nul inside",
        "\ufffd\ufffd error: not utf-8",
        "(?:*+ error: regex syntax",
    ]
    assert PassingFile(lambda: [log]).has_many(asked) == [True, True, True]


def _log(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


OLD = [f"error: known problem number {n} also in the passing run" for n in range(130)]
NEW = [f"error: something new broke in part {n}" for n in range(3)]


def test_old_lines_do_not_crowd_the_new_ones_out_of_the_best_guesses() -> None:
    # 30 old lines fill the first of a step's pool (24), 100 its last ones (40): the new
    # lines between would be lost had the old ones not been sifted out first.
    assert len(OLD) < SIFTED_HEAD
    passing_log = _log(OLD)
    job = JobClassifier(CATALOG, "job", passing=PassingFile(lambda: [passing_log]))
    job.feed(_log(OLD[:30] + NEW + OLD[30:]))
    result = job.finish()
    assert [line.text for line in result.fallback_lines] == NEW
    assert all(line.new for line in result.fallback_lines)


def test_a_passing_log_that_cannot_be_read_leaves_the_triage_whole() -> None:
    def broken() -> Iterator[bytes]:
        yield b"error: something\n"
        raise PassingUnreadable("passing.log: truncated archive")

    job = JobClassifier(CATALOG, "job", passing=PassingFile(broken))
    job.feed(_log(NEW))
    result = job.finish()
    assert job.passing_error == "passing.log: truncated archive"
    assert [line.new for line in result.fallback_lines] == [None] * len(NEW)
