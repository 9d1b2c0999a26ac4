"""The byte cap's tail (log_tail.py) on any log cut into any chunks: what it passes on is the
log's end from a line start and at most the cap, the lines and step marks it held back are
counted right, and a stream of unknown size is held in bounded memory."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage_bot.core import logs
from triage_bot.core.log_tail import TailGate

LINE = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")),
    st.sampled_from([b"2026-10-21T09:12:33.1234567Z ##[group]Run tests", b"##[group]Build"]),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, max_size=60),
    ends_in_newline=st.booleans(),
    cap=st.integers(1, 400),
    cuts=st.lists(st.integers(1, 97), min_size=1, max_size=5),
    size_known=st.booleans(),
)
def test_the_tail_is_the_end_from_a_line_start_and_the_head_is_counted(
    lines: list[bytes], ends_in_newline: bool, cap: int, cuts: list[int], size_known: bool
) -> None:
    log = b"\n".join(lines) + (b"\n" if ends_in_newline and lines else b"")
    gate = TailGate(cap, len(log) if size_known else None)
    passed, position, turn = b"", 0, 0
    while position < len(log):
        chunk = log[position : position + cuts[turn % len(cuts)]]
        position, turn = position + len(chunk), turn + 1
        passed += gate.take(chunk)
        assert gate._ring_bytes <= cap + max(cuts)  # held: at most the cap and one chunk
    passed += gate.drain()

    head = log[: len(log) - len(passed)]
    assert log.endswith(passed) and len(passed) <= cap
    # The tail starts at a line start (none: a last line longer than the cap, nothing passes).
    assert head == b"" or head.endswith(b"\n") or passed == b""
    if len(log) <= cap:
        assert passed == log and not gate.skipped
    else:  # the line the cut falls in is the only one given up beyond the cap
        assert b"\n" not in log[len(log) - cap : len(head) - 1]
    assert gate.skipped_lines == head.count(b"\n") and gate.skipped_bytes == len(head)
    expected_marks = [
        number
        for number, line in enumerate(head.split(b"\n")[:-1], start=1)
        if logs.normalise(line)[1].startswith("##[group]")
    ]
    assert [mark.line for mark in gate.groups] == expected_marks
