from __future__ import annotations

from triage_bot import logs


def test_timestamp_bom_crlf_and_ansi_are_removed() -> None:
    raw = "\ufeff2026-10-21T09:12:33.1234567Z \x1b[31merror\x1b[0m: boom\r".encode()
    timestamp, text = logs.normalise(raw)
    assert timestamp == "2026-10-21T09:12:33.1234567Z"
    assert text == "error: boom"


def test_lines_without_timestamps_are_kept_as_they_are() -> None:
    assert logs.normalise(b"FAILED tests/x.py::t - boom") == (None, "FAILED tests/x.py::t - boom")
    # A date at the start that is not GitHub's timestamp stays part of the text.
    assert logs.normalise(b"2026-10-21 09:12:33 INFO x")[1] == "2026-10-21 09:12:33 INFO x"


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    _, text = logs.normalise(b"bad \xff\xfe bytes")
    assert text == "bad \ufffd\ufffd bytes"


def test_markers_and_line_numbers() -> None:
    data = b"2026-10-21T09:12:33.1Z ##[group]Run tests\nplain\n##[error]It broke\nlast"
    lines = list(logs.iter_lines([data[:7], data[7:30], data[30:]]))
    assert [line.number for line in lines] == [1, 2, 3, 4]
    assert lines[0].marker == "group" and lines[0].message == "Run tests"
    assert lines[2].marker == "error" and lines[2].message == "It broke"
    assert lines[1].marker is None and lines[3].text == "last"


def test_osc_hyperlinks_and_cursor_codes_are_stripped() -> None:
    raw = b"\x1b]8;;https://x.test\x07link\x1b]8;;\x07 \x1b[2K\x1b[1Gdone"
    assert logs.normalise(raw)[1] == "link done"


def test_github_timestamps_parse() -> None:
    moment = logs.parse_timestamp("2026-10-21T09:12:33.1234567Z")
    assert (moment.hour, moment.second, moment.microsecond) == (9, 33, 123456)


def test_lines_map_to_steps_for_links() -> None:
    from datetime import UTC, datetime

    from helpers import compiled

    from triage_bot.classify import classify

    log = (
        "2026-10-21T09:00:00.1000000Z Current runner version: '2.329.0'\n"
        "2026-10-21T09:00:00.2000000Z ##[group]Operating System\n"
        "2026-10-21T09:00:00.3000000Z ##[endgroup]\n"
        "2026-10-21T09:00:05.1000000Z ##[group]Run actions/checkout@v4\n"
        "2026-10-21T09:00:05.2000000Z ##[endgroup]\n"
        "2026-10-21T09:00:09.1000000Z ##[group]Run pytest\n"
        "2026-10-21T09:00:09.2000000Z pytest -q\n"
        "2026-10-21T09:00:09.3000000Z ##[endgroup]\n"
        "2026-10-21T09:00:10.1000000Z ModuleNotFoundError: No module named 'x'\n"
    )
    result = classify([log.encode()], compiled(), "job")

    def at(second: int) -> datetime:
        return datetime(2026, 10, 21, 9, 0, second, tzinfo=UTC)

    steps = [logs.Step(1, at(0), at(4)), logs.Step(2, at(5), at(8)), logs.Step(3, at(9), at(11))]
    assert [g.line for g in result.groups] == [2, 4, 6]
    assert logs.locate_step(9, result.groups, steps) == (3, 4)
    assert logs.locate_step(5, result.groups, steps) == (2, 2)
    assert logs.locate_step(1, result.groups, steps) == (1, 1)
    assert logs.locate_step(3, result.groups, steps) == (1, 3)
    assert logs.locate_step(3, result.groups, []) is None


def test_buildkit_prefix_goes_like_a_timestamp() -> None:
    raw = b"2026-10-21T09:12:33.1234567Z #10 2.917 npm error code ERESOLVE"
    assert logs.normalise(raw) == ("2026-10-21T09:12:33.1234567Z", "npm error code ERESOLVE")
    assert logs.normalise(b"#10 [build 3/7] RUN npm ci")[1] == "#10 [build 3/7] RUN npm ci"


def test_anchored_signature_matches_inside_docker_build() -> None:
    from helpers import run_log

    result = run_log(
        "#10 2.917 npm error code ERESOLVE\n#10 2.918 npm error ERESOLVE could not resolve\n"
    )
    assert result.root_cause is not None
    assert result.root_cause.signature.id == "node-npm-eresolve"
