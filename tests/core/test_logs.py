from __future__ import annotations

from triage_bot.core import logs


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


def test_lines_of_a_log_in_chunks_cut_anywhere() -> None:
    data = b"2026-10-21T09:12:33.1Z ##[group]Run tests\nplain\n##[error]It broke\nlast"
    lines = list(logs.raw_lines([data[:7], data[7:30], data[30:]]))
    assert [logs.normalise(raw) for raw in lines] == [
        ("2026-10-21T09:12:33.1Z", "##[group]Run tests"),
        (None, "plain"),
        (None, "##[error]It broke"),
        (None, "last"),
    ]


def test_osc_hyperlinks_and_cursor_codes_are_stripped() -> None:
    raw = b"\x1b]8;;https://x.test\x07link\x1b]8;;\x07 \x1b[2K\x1b[1Gdone"
    assert logs.normalise(raw)[1] == "link done"


def test_github_timestamps_parse() -> None:
    moment = logs.parse_timestamp("2026-10-21T09:12:33.1234567Z")
    assert (moment.hour, moment.second, moment.microsecond) == (9, 33, 123456)


def test_lines_map_to_steps_for_links() -> None:
    from datetime import UTC, datetime

    from helpers import compiled

    from triage_bot.core.classify import classify

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


def test_docker_compose_service_prefix_goes_and_tables_stay() -> None:
    # A PHPUnit run inside `docker compose up` (a public GitHub Actions log, 2026-06-07).
    raw = b"2026-06-07T07:21:15.0621724Z app-1  | There were 16 errors:"
    assert logs.normalise(raw) == ("2026-06-07T07:21:15.0621724Z", "There were 16 errors:")
    assert logs.normalise(b"web_1       | npm error code ERESOLVE")[1] == "npm error code ERESOLVE"
    for kept in ("app  | not a replica", "| a | b |", "test_x  passed | 0.1s", "2 | 3 | 5"):
        assert logs.normalise(kept.encode())[1] == kept


# Other CI systems' log shapes. The excerpts are real lines, shortened, from the sources named.


def test_gh_run_view_prefix_goes_and_keeps_the_timestamp() -> None:
    # cli/cli issue #10551: `gh run view --log-failed` output.
    raw = (
        b"build-ubuntu-old-ocamls (make, 3.08.4)\tSet up job\t"
        b"2025-03-05T13:30:32.6031507Z Current runner version: '2.322.0'"
    )
    assert logs.normalise(raw) == (
        "2025-03-05T13:30:32.6031507Z",
        "Current runner version: '2.322.0'",
    )
    # The first line of a step's log carries a BOM after the tabs.
    raw = "job\tRun tests\t\ufeff2025-03-05T13:30:33.1Z ##[group]Run pytest".encode()
    assert logs.normalise(raw) == ("2025-03-05T13:30:33.1Z", "##[group]Run pytest")
    # A tab-separated line that is not gh's prefix stays as it is.
    assert logs.normalise(b"a\tb\tc") == (None, "a\tb\tc")
    # The lines of a multi-line entry carry no timestamp; gh still prints its columns
    # (jsell-rh/gyre, specs/tasks/task-210.md: Playwright's annotation, then its error).
    raw = b"e2e\tUNKNOWN STEP\t    Error: expect(locator).toBeVisible() failed"
    assert logs.normalise(raw) == (None, "    Error: expect(locator).toBeVisible() failed")
    assert logs.normalise(b"e2e\tUNKNOWN STEP\t") == (None, "")
    assert logs.normalise(b"e2e\tRun tests\t      297 |") == (None, "      297 |")
    # Go's package lines keep their columns (tests/core/go_logs).
    for kept in (b"ok  \tgithub.com/x/y\t0.013s", b"FAIL\tgithub.com/x/y\t0.013s"):
        assert logs.normalise(kept)[1] == kept.decode()


def test_travis_fold_and_time_markers_go() -> None:
    # Travis CI job logs (LogChunks): markers glued to the line with `\r` and ESC[0K.
    raw = b"travis_fold:end:git.checkout\r\x1b[0K$ export PATH=./node_modules/.bin:$PATH\r"
    assert logs.normalise(raw)[1] == "$ export PATH=./node_modules/.bin:$PATH"
    raw = (
        b"travis_time:end:13664106:start=1564245830264576748,finish=1564245830288338851,"
        b"duration=23762103\r\x1b[0Ktravis_fold:end:after_failure\r\x1b[0K"
    )
    assert logs.normalise(raw)[1] == ""
    assert logs.normalise(b"travis_fold:start:install")[1] == ""
    # Travis' own verdict on a command is text a signature may want.
    said = b'\x1b[31;1mThe command "rake" exited with 1.\x1b[0m'
    assert logs.normalise(said)[1] == 'The command "rake" exited with 1.'


def test_gitlab_sections_and_timestamps_go() -> None:
    # gitlab-runner, common/buildtest/sections.go: a section's start glued to its header.
    raw = (
        b"section_start:1627911560:section_27e4a11ba6450738\r\x1b[0K"
        b"\x1b[32;1m$ echo Hello World\x1b[0;m"
    )
    assert logs.normalise(raw) == (None, "$ echo Hello World")
    raw = b"\x1b[0Ksection_end:1627911560:section_27e4a11ba6450738\r\x1b[0K"
    assert logs.normalise(raw)[1] == ""
    # GitLab 17's timestamped job logs: the stream and `+` (a continued line) go too.
    raw = b"2024-05-22T12:43:46.962712Z 00O+ $ make test"
    assert logs.normalise(raw) == ("2024-05-22T12:43:46.962712Z", "$ make test")


def test_jenkins_timestamper_prefixes_go_and_pipeline_lines_stay() -> None:
    # jenkinsci/timestamper-plugin pull request #25 (Pipeline, ISO) and eclipse-openj9/openj9
    # pull request #3927 (freestyle, elapsed time).
    raw = b"[2020-04-29T13:03:20.738Z] Cloning the remote Git repository"
    assert logs.normalise(raw) == ("2020-04-29T13:03:20.738Z", "Cloning the remote Git repository")
    raw = b"00:04:25.667 [WS-CLEANUP] Deleting project workspace..."
    assert logs.normalise(raw) == (None, "[WS-CLEANUP] Deleting project workspace...")
    assert logs.normalise(b"12:34:56 [ERROR] BUILD FAILURE")[1] == "[ERROR] BUILD FAILURE"
    # The plugin's README (jenkinsci/timestamper-plugin) prints two spaces after the clock.
    assert logs.normalise(b"21:51:15  Started by user anonymous")[1] == "Started by user anonymous"
    pipeline = logs.normalise(b"[2020-04-29T13:03:20.725Z] [Pipeline] checkout")[1]
    assert pipeline == "[Pipeline] checkout" and logs.is_bookkeeping(pipeline)
    assert not logs.is_bookkeeping("[ERROR] BUILD FAILURE")
    # A time inside the text is not a prefix.
    assert logs.normalise(b"took 00:01:02 to run")[1] == "took 00:01:02 to run"


def test_fastlane_and_gulp_clock_prefixes_go() -> None:
    # fastlane runs xcodebuild (through xcpretty) and prints each line after its clock; the
    # tool's own text is what signatures read. gulp prints the same clock without the colon.
    raw = b"[13:48:13]: \xe2\x96\xb8 ** ARCHIVE FAILED **"
    assert logs.normalise(raw) == (None, "\u25b8 ** ARCHIVE FAILED **")
    assert logs.normalise(b"[19:56:29] 'eslint' errored after 970 ms")[1] == (
        "'eslint' errored after 970 ms"
    )
    # Not a clock: a bracketed counter or a date stays.
    assert logs.normalise(b"[12:34] done")[1] == "[12:34] done"
    assert logs.normalise(b"[1/3]: fetching")[1] == "[1/3]: fetching"


def test_progress_rewritten_with_bare_cr_shows_its_last_screen() -> None:
    # Maven's download progress as Jenkins stores it: one `\n` line, many `\r` screens.
    raw = (
        b"Progress (1): 2.2/3.9 kB\rProgress (1): 3.9 kB\r                    \r"
        b"Downloaded from central: https://repo.maven.apache.org/maven2/x/x-1.pom (3.9 kB)"
    )
    assert logs.normalise(raw)[1].startswith("Downloaded from central: ")
    assert logs.normalise(b"Progress (1): 2.2/3.9 kB\rProgress (1): 3.9 kB\r")[1] == (
        "Progress (1): 3.9 kB"
    )
    assert logs.last_screen_segment("\r \r") == ""


def test_crlf_and_cr_cr_lf_endings_go() -> None:
    assert logs.normalise(b"npm ERR! code ELIFECYCLE\r")[1] == "npm ERR! code ELIFECYCLE"
    assert logs.normalise(b"npm ERR! code ELIFECYCLE\r\r")[1] == "npm ERR! code ELIFECYCLE"


def test_colour_inside_sbt_error_prefix_goes() -> None:
    # sbt's coloured prefix, as its logger prints it (`[\u001b[31merror\u001b[0m] `).
    raw = b"\x1b[0m[\x1b[0m\x1b[31merror\x1b[0m] \x1b[0mFailed: Total 12, Failed 1, Errors 0\x1b[0m"
    assert logs.normalise(raw)[1] == "[error] Failed: Total 12, Failed 1, Errors 0"


def test_line_numbers_count_newlines_only_in_a_travis_log() -> None:
    from helpers import compiled

    from triage_bot.core.classify import classify

    log = (
        b"travis_fold:start:install\r\x1b[0Ktravis_time:start:0a1b\r\x1b[0K$ pip install -e .\r\n"
        b"Collecting x\rDownloading x-1.0.tar.gz (10%)\rDownloading x-1.0.tar.gz (100%)\r\n"
        b"travis_time:end:0a1b:start=1,finish=2,duration=1\r\x1b[0Ktravis_fold:end:install\r\n"
        b"$ python -m pytest\r\n"
        b"E   ModuleNotFoundError: No module named 'yaml'\r\r\n"
        b'The command "python -m pytest" exited with 1.\r\n'
    )
    result = classify([log], compiled(), "job")
    root = result.matches[0]
    assert root.signature.id == "python-module-not-found"
    assert root.line == 5
    assert root.text == "E   ModuleNotFoundError: No module named 'yaml'"
    assert root.before[-3:] == ["Downloading x-1.0.tar.gz (100%)", "", "$ python -m pytest"]
