"""The root cause as a person reading the log would pick it, and the best-guess lines.

The lines are quoted from real CI logs, each source named beside it: the LogChunks data set
(Brandt et al., MSR 2020: Travis CI logs of public projects, named `owner/repo build N`) and
the real windows of tests/accuracy and patterns/. Where a test joins lines of two logs into
one, it says so: the rule is about their order, not their origin.
"""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import ROOT, compiled, run_log

from triage_bot.core import logs, ranking
from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import CompiledCatalog, JobClassifier, classify
from triage_bot.core.classify_results import JobResult
from triage_bot.core.compare import PassingFile
from triage_bot.core.ranking import SCORE_PARTS, line_score, low_level, step_end

# schwehr/generic-sensor-format issue 12 (tests/accuracy/c/travis-gcc-storage-size.log).
GCC = "gsf.c:258:24: error: storage size of \u2018stbuf\u2019 isn\u2019t known"
MAKE_INNER = "make[1]: *** [gsf.o] Error 1"
MAKE_OUTER = "make: *** [all] Error 2"
MAKE_FAILED = 'The command "make test" exited with 2.'
# NancyFx/Nancy build 377324945 (LogChunks): apt's warning in a step that went on.
APT_WARNING = (
    "W: Failed to fetch http://www.apache.org/dist/cassandra/debian/dists/39x/InRelease  "
    "Could not connect to www.apache.org:80 (195.154.151.36), connection timed out "
    "[IP: 195.154.151.36 80]"
)
# avelino/awesome-go build 553491785 (LogChunks): a Go test and its failing subtest.
GO_PARENT = "--- FAIL: TestAlpha (0.02s)"
GO_SUBTEST = "    --- FAIL: TestAlpha/Meetups (0.00s)"
# LightTable/LightTable build 557196013 (LogChunks): a failing step whose error holds no
# word like "error".
PERMISSION = (
    "/home/travis/.travis/functions: line 104: "
    "/home/travis/build/LightTable/LightTable/install-jdk.sh: Permission denied"
)


def travis_step(command: str, lines: list[str], code: int) -> list[str]:
    """A Travis CI step: the command echoed, its output, its end (as Travis prints them)."""
    return [f"$ {command}", *lines, f'The command "{command}" exited with {code}.']


def run_without(text: str, *signature_ids: str) -> JobResult:
    """The built-in catalog less some signatures: a shape that catalog has since learnt stays
    unknown here, so the ranking's and the fallback's own cases keep testing them."""
    catalog = CompiledCatalog(load_catalog().without(signature_ids))
    return classify([text.encode()], catalog, "job")


def log_of(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def github_log(lines: list[str], stamp: str = "2026-10-21T09:12:33.1234567Z ") -> str:
    """A GitHub Actions job log: each line after the runner's timestamp."""
    return "".join(stamp + line + "\n" for line in lines)


def test_step_ends_of_each_ci_system() -> None:
    assert step_end(MAKE_FAILED) is True
    assert step_end('The command "jdk_switcher use oraclejdk8" exited with 0.') is False
    assert step_end("##[error]Process completed with exit code 1.") is True
    assert step_end("ERROR: Job failed: exit code 1") is True
    assert step_end("Job succeeded") is False
    assert step_end("Finished: FAILURE") is True
    assert step_end("Finished: SUCCESS") is False
    assert step_end("Done. Your build exited with 1.") is None
    # Travis' set-up phases, its retries, and a command of several lines (travis-build).
    assert step_end('The command "bundle install" failed and exited with 5 during .') is True
    assert step_end('The command "npm ci" failed and exited with 1 during install.') is True
    assert step_end('The command "bundle exec s3_website push" failed 3 times.') is True
    assert step_end('" exited with 1.') is True
    assert step_end('" exited with 0.') is False
    assert step_end('echo "x" exited with 1.') is None
    assert step_end("##[error]Error: something") is None
    # CircleCI: `Exited with code exit status 1` (before 2019, `Exited with code 1`).
    assert step_end("Exited with code exit status 1") is True
    assert step_end("Exited with code 2") is True
    assert step_end("Exited with code exit status 0") is False
    assert step_end("Exited with code exit status 1 after retries") is None


def test_a_circleci_step_end_keeps_the_failing_steps_last_words() -> None:
    # A checker no signature knows, under a CircleCI step (no error word): the step's end
    # gives the job its best-guess lines, the CLI's own failure mark first.
    log = (
        "Checking 12 pages...\n\n"
        "\u2717 3 links are broken in docs/index.md\n"
        "  https://example.invalid/a (404)\n\n"
        "Checked 12 pages.\n\n"
        "Exited with code exit status 1\n"
        "CircleCI received exit code 1\n"
    )
    result = run_log(log)
    assert result.root_cause is None
    assert result.fallback_lines
    assert ranking.best_guess_index([f.text for f in result.fallback_lines]) == 0
    assert result.fallback_lines[0].text.startswith("\u2717 3 links are broken")


def test_at_equal_priority_a_line_that_says_what_failed_outranks_a_lone_wrapper() -> None:
    # Bundler's verdict (sachinkale/hotelonrails issue 5) and Docker's legacy builder's
    # wrapper (nokn0wthing/CVE-2023-20052 issue 1) share priority 45; the two logs are joined
    # here for their order. More than a wrapper's window of output lies between them in a log
    # without steps (a bare `docker build` log, as DataKit CI keeps), so the wrapper stands
    # for nothing; nearer the end, it used to win the tie.
    bundler = "An error occurred while installing bcrypt-ruby (2.1.4), and Bundler cannot continue."
    docker = (
        "The command '/bin/sh -c apt-get install -y ca-certificates gnupg wget' returned a"
        " non-zero code: 100"
    )
    output = [f"Installing gem number {n} of the Gemfile" for n in range(150)]
    result = run_log(log_of(["Step 5 : RUN bundle install", bundler, *output, docker]))
    root = result.root_cause
    assert root is not None and root.text == bundler
    top = result.weighed[0]
    wrapper = next(w for w in result.weighed if w.match.text == docker)
    says_what, priority = SCORE_PARTS.index("says_what"), SCORE_PARTS.index("priority")
    assert wrapper.score[says_what] == 0 and top.score[says_what] == 1
    assert wrapper.score[priority] == top.score[priority]


def test_wrapper_defers_to_the_specific_error_above_it() -> None:
    # The compile error outranks make's lines by priority anyway; both make lines defer to
    # it (a specific error first, an inner wrapper only when there is none).
    result = run_log(log_of(["$ make test", GCC, MAKE_INNER, MAKE_OUTER, MAKE_FAILED]))
    root = result.root_cause
    assert root is not None and root.text == GCC
    assert "specific error above the wrapper `make[1]: *** [gsf.o] Error 1`" in root.reason
    assert "in the failing step" in root.reason
    inner = next(w for w in result.weighed if w.match.text == MAKE_INNER)
    outer = next(w for w in result.weighed if w.match.text == MAKE_OUTER)
    deferred = SCORE_PARTS.index("not_deferred")
    assert inner.score[deferred] == 0 and outer.score[deferred] == 0
    assert f"defers to `{GCC}`" in outer.reason
    alone = run_log(log_of(["$ make test", MAKE_INNER, MAKE_OUTER, MAKE_FAILED]))
    assert alone.root_cause is not None and alone.root_cause.text == MAKE_INNER


def test_wrapper_with_a_higher_priority_still_defers() -> None:
    # Two real lines, joined: pytest's assertion (priority 40) printed inside a `docker
    # build` whose BuildKit summary (patterns/docker/docker-buildkit-run-failed.log) has 45.
    assertion = "E       assert 200 == 503"
    buildkit = (
        'ERROR: failed to solve: process "/bin/sh -c pytest" did not complete successfully: '
        "exit code: 1"
    )
    result = run_log(log_of(["tests/test_api.py F", assertion, "", buildkit]))
    root = result.root_cause
    assert root is not None and root.text == assertion, [w.reason for w in result.weighed]
    wrapper = next(m for m in result.matches if m.signature.wraps)
    assert wrapper.signature.priority > root.signature.priority
    # Beyond the window, the wrapper no longer stands for it.
    far = ["tests/test_api.py F", assertion, *["ok"] * (ranking.WRAP_WINDOW + 1), buildkit]
    assert run_log(log_of(far)).root_cause.signature.wraps  # type: ignore[union-attr]


def test_a_wrapper_alone_gets_best_guess_lines_above_it() -> None:
    # elixir-lang/elixir build 569217362 (LogChunks): ExUnit's report, then make's line.
    report = "  1) test raises error message about correct usage (Mix.Tasks.IexTest)"
    lines = ["$ make test", report, "     Assertion with =~ failed", "make: *** [test_mix] Error 1"]
    result = run_without(
        log_of([*lines, 'The command "make test" exited with 2.']), "elixir-exunit-test-failed"
    )
    assert result.root_cause is not None and result.root_cause.signature.wraps
    assert "a wrapper line with no error matched above it" in result.root_cause.reason
    assert report in [f.text for f in result.fallback_lines]


def test_the_failing_step_beats_a_step_that_passed() -> None:
    # Two steps: the first printed a network error and passed (exit 0), the second failed
    # on the compile error, whose priority is lower than the network error's.
    dns = "curl: (6) Could not resolve host: github.com"
    lines = [
        *travis_step("curl -sSL https://github.com/x/y.tar.gz | tar xz || true", [dns], 0),
        *travis_step("make test", [GCC, MAKE_OUTER], 2),
    ]
    result = run_log(log_of(lines))
    root = result.root_cause
    assert root is not None and root.text == GCC
    network = next(w for w in result.weighed if w.match.text == dns)
    assert network.match.signature.priority > root.signature.priority
    assert "in a step that passed (ended at line 3)" in network.reason


def test_a_travis_command_without_an_end_line_went_on() -> None:
    # Travis prints no end for its own set-up commands (the marker before each command is
    # `travis_time:start:ID`, CR and ESC[0K glued to its first line); a set-up error it went
    # on from ranks below the error of the step that failed, though of a higher priority.
    missing = "curl: (6) Could not resolve host: cli-assets.heroku.com"
    lines = [
        "travis_time:start:0aa1\r\x1b[0K$ curl -sSL https://cli-assets.heroku.com/install.sh",
        missing,
        "travis_time:start:0bb2\r\x1b[0K$ make test",
        GCC,
        MAKE_OUTER,
        "travis_time:end:0bb2:start=1,finish=2,duration=1\r\x1b[0K" + MAKE_FAILED,
    ]
    result = run_log(log_of(lines))
    root = result.root_cause
    assert root is not None and root.text == GCC
    setup = next(w for w in result.weighed if w.match.text == missing)
    assert setup.match.signature.priority > root.signature.priority
    assert "in a step that passed (ended at line 2)" in setup.reason


def test_a_wrapper_alone_in_its_step_stands_for_an_earlier_failed_steps_error() -> None:
    # Travis runs every `script` command: the first one failed on a compile error, the last
    # one printed only its end; that end stands for the first step's error.
    lines = [
        *travis_step("make", [GCC, MAKE_OUTER], 2),
        *travis_step("./scripts/deploy.sh", ["deploying"], 1),
    ]
    result = run_log(log_of(lines))
    root = result.root_cause
    assert root is not None and root.text == GCC
    assert "in an earlier step that failed" in root.reason
    last = next(w for w in result.weighed if w.match.line == len(lines))
    assert last.match.signature.wraps and f"defers to `{GCC}`" in last.reason


def test_with_no_specific_error_there_a_wrapper_stands_for_an_earlier_steps_wrapper() -> None:
    # HubSpot/Baragon, Travis job 89270049 (via tdurieux/BugSwarm-dissection): `travis_retry
    # mvn install` failed three times on Maven's goal (a wrapper, its details WARNING lines),
    # then Travis ended the job on a line of its own after the step's end.
    goal = (
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-dependency-plugin:2.10:"
        "analyze-only (default) on project BaragonService: Dependency problems found"
    )
    command = "mvn install -DskipTests=true -Dmaven.javadoc.skip=true -B -V"
    lines = [
        f"$ travis_retry {command}",
        "[WARNING] Used undeclared dependencies found:",
        "[WARNING]    org.apache.zookeeper:zookeeper:jar:3.4.6:compile",
        goal,
        f'The command "eval {command}" failed 3 times.',
        "travis_time:end:05461c20:start=1446659147402853832,finish=1446659426164555169",
        f'The command "{command}" failed and exited with 1 during .',
        "Your build has been stopped.",
    ]
    result = run_log(log_of(lines))
    root = result.root_cause
    assert root is not None and root.text == goal
    assert root.signature.wraps and "specific error above the wrapper" in root.reason


def test_a_travis_command_of_several_lines_ends_its_step() -> None:
    # The end line of a multi-line command is its closing quote: `" exited with 1.`.
    lines = ['$ case "$BUILD" in', "  stack) stack test ;;", "esac", GCC]
    lines += [
        "gsf.c:3:1: warning: unused",
        '" exited with 1.',
        "",
        "Done. Your build exited with 1.",
    ][:]
    result = run_log(log_of(lines))
    assert result.steps is not None and result.steps.failing is not None
    assert result.root_cause is not None and result.root_cause.text == GCC


def test_fallback_without_a_failing_step_reads_the_whole_log() -> None:
    # A log cut short: no step says it failed; the best guesses come from every step, not
    # only the last one Travis started.
    lines = [
        "travis_time:start:01\r\x1b[0K$ ./configure",
        "configure: error: C compiler cannot create executables",
        "travis_time:start:02\r\x1b[0K$ echo done",
        "done",
    ]
    result = run_without(log_of(lines), "c-configure-error", "cpp-configure-error")
    assert "configure: error: C compiler cannot create executables" in [
        f.text for f in result.fallback_lines
    ]


def test_a_github_step_that_started_after_an_error_left_it_behind() -> None:
    lines = [
        "##[group]Run ./fetch-deps.sh",
        "curl: (6) Could not resolve host: github.com",
        "##[group]Run make test",
        GCC,
        "##[error]Process completed with exit code 2.",
    ]
    result = run_log(github_log(lines))
    assert result.root_cause is not None and result.root_cause.text == GCC


def test_a_javascript_actions_own_error_ends_its_step_before_the_clean_up() -> None:
    # An action that fails through core.setFailed prints `##[error]<its message>` and no
    # runner line (junit5's gradle-build-action, `Gradle build failed: ...`); what the
    # post-job clean-up prints below it is not that step's.
    module = "ModuleNotFoundError: No module named 'yaml'"
    disk = "cp: error writing '/home/runner/.cache/pip/blob': No space left on device"
    lines = [
        "##[group]Run my-org/python-test-action@v1",
        module,
        "##[error]Tests failed: the runner exited early",
        "Post job cleanup.",
        disk,
    ]
    result = run_log(github_log(lines))
    root = result.root_cause
    assert root is not None and root.text == module
    assert "in the failing step (ended at line 3: `##[error]Tests failed" in root.reason
    after = next(w for w in result.weighed if w.match.text == disk)
    assert after.match.signature.priority > root.signature.priority
    assert after.reason.startswith("after the failing step")


def test_a_javascript_actions_failure_stays_the_failing_step_past_if_failure_steps() -> None:
    # pnpm/action-setup failing through core.setFailed, then an `if: failure()` step that
    # ran and passed, then the clean-up's warning: the action's step is the failing one.
    module = "ModuleNotFoundError: No module named 'yaml'"
    lines = [
        "##[group]Run my-org/setup-action@v4",
        module,
        "##[error]Setup failed: see above",
        "##[group]Run echo 'Pipeline failed'",
        "Pipeline failed",
        "Post job cleanup.",
        "cp: error writing '/home/runner/.cache/pip/blob': No space left on device",
    ]
    result = run_log(github_log(lines))
    root = result.root_cause
    assert root is not None and root.text == module
    assert "in the failing step (ended at line 3: `##[error]Setup failed" in root.reason


def test_an_annotation_in_a_step_that_went_on_marks_no_failing_step() -> None:
    # `echo "::error::..."` in a step that exited 0, then a step that failed: the runner's
    # end marks the failing step, not the annotation.
    lines = [
        "##[group]Run ./lint.sh",
        "##[error]docs/x.md: line too long",
        "##[group]Run make test",
        GCC,
        "##[error]Process completed with exit code 2.",
    ]
    result = run_log(github_log(lines))
    assert result.root_cause is not None and result.root_cause.text == GCC
    steps = result.steps
    assert steps is not None and steps.failing == 2 and not steps.ends[1].failed  # 0: set-up


def test_a_warning_ranks_below_the_error() -> None:
    # Joined: apt's warning (priority 64) and a pytest assertion (40) in one failing step.
    assertion = "E       assert 200 == 503"
    result = run_log(log_of(travis_step("pytest", [APT_WARNING, assertion], 1)))
    assert result.root_cause is not None and result.root_cause.text == assertion
    warned = next(w for w in result.weighed if w.match.text == APT_WARNING)
    assert warned.match.level == "WARN" and "printed at WARN level" in warned.reason


def test_level_words_that_are_the_failure_are_not_a_level() -> None:
    # Go's race detector and the sanitizers print their report at "WARNING:".
    assert low_level("WARNING: DATA RACE", 0) is None
    assert low_level(APT_WARNING, APT_WARNING.index("Failed")) == "WARN"
    line = 'time="2019-06-01T10:00:00Z" level=info msg="connection refused, retrying"'
    assert low_level(line, line.index("connection")) == "INFO"
    assert low_level("[INFO] BUILD FAILURE", 7) == "INFO"


def test_a_failure_retried_in_a_step_that_passed_ranks_below() -> None:
    dns = "curl: (6) Could not resolve host: github.com"
    lines = [
        *travis_step("./retry curl -sSL https://github.com/x/y", [dns, dns, "downloaded"], 0),
        *travis_step("make test", ["Tests failed", MAKE_OUTER], 2),
    ]
    result = run_log(log_of(lines))
    network = next(w for w in result.weighed if w.match.text == dns)
    assert "retried" in network.reason
    assert result.root_cause is not None and result.root_cause.text == MAKE_OUTER


def test_a_parent_test_defers_to_its_failing_subtest() -> None:
    lines = travis_step("go test ./...", [GO_PARENT, GO_SUBTEST, "FAIL"], 1)
    result = run_log(log_of(lines))
    root = result.root_cause
    assert root is not None and root.captures["test"] == "TestAlpha/Meetups"
    parent = next(w for w in result.weighed if w.match.text == GO_PARENT)
    assert parent.reason.startswith(f"a parent: defers to `{GO_SUBTEST.strip()}` below it")


def test_among_equals_the_nearest_the_end_wins_but_a_run_counts_from_its_first() -> None:
    # rauthy issue 996 (tests/accuracy/rust/cargo-e0425-many.log): the first of a run of
    # compiler errors is the cause; Go's `--- FAIL` of another signature, later, is nearer.
    first = "error[E0425]: cannot find value `node_config` in this scope"
    second = "error[E0425]: cannot find value `vars` in this scope"
    result = run_log(log_of([first, "", second]))
    assert result.root_cause is not None and result.root_cause.text == first
    assert "no failing step is marked" in result.root_cause.reason
    assert "the first of 2 `rust-rustc-error` matches" in result.root_cause.reason


def test_a_final_report_counts_from_its_last_match() -> None:
    # awesome_bot prints its `> White listed:` list (allowed links, same shape) before the
    # `Issues :-(` report (lib/awesome_bot/cli.rb, dkhamsing/awesome_bot): the report wins.
    allowed = "  2. [L1020] 404 https://preyproject.com/img/home/report-simple-2.png  "
    broken = "  1. [L0153] 404 http://a5.mzstatic.com/us/r30/screen696x696.jpeg  "
    lines = ["> White listed:", allowed, "", "Issues :-(", "> Links ", broken, "> Dupes "]
    result = run_log(log_of(travis_step("awesome_bot README.md", lines, 1)))
    assert result.root_cause is not None and result.root_cause.text == broken
    assert "the last of 2 `docs-awesome-bot-link-issue` matches" in result.root_cause.reason


def test_with_no_error_named_the_table_shows_the_message_above_the_closing_lines() -> None:
    # pytorch/pytorch job 90805518060's last lines (pytorch/test-infra's log-classifier
    # fixture ghstack_too_deep.txt): the script's own reason, then two lines that only say
    # the step exited. Neither names an error; the reason is what a reader wants.
    reason = (
        "PR #190825 sits on top of >=10 ghstack entries; refusing to run CI. Rebase once the "
        "lower PRs land, or add the ciflow/trunk label to force CI on this PR."
    )
    wrapper = (
        "##[error][OSDC] Step script exited with code 1. This is a script/workflow error, "
        "not an infrastructure issue. Check the step logs above for the actual failure."
    )
    texts = ["Job name: linux-jammy-py3.10-gcc11 / build", reason, wrapper]
    assert line_score(wrapper) == 1
    assert ranking.best_guess_index(texts) == 1
    # A line that names an error still comes first, wherever it is.
    assert ranking.best_guess_index([reason, GCC, wrapper]) == 1
    # Only closing lines: the last of them.
    assert ranking.best_guess_index([MAKE_OUTER, wrapper]) == 1


# Python's report of an exception raised in a `__del__` at exit, as miaucl/cookidoo's README
# quotes it (aiohttp on Windows): printed, ignored, and the program goes on.
STEP_EXIT = "##[error]Process completed with exit code 1."
IGNORED_TRACEBACK = [
    "Exception ignored in: <function _ProactorBasePipeTransport.__del__ at 0x00000000>",
    "Traceback (most recent call last):",
    '  File "C:\\...\\py38\\lib\\asyncio\\base_events.py", line 508, in _check_closed',
    "    raise RuntimeError('Event loop is closed')",
    "RuntimeError: Event loop is closed",
]


def test_a_traceback_python_ignored_is_not_the_failure() -> None:
    # A failing step whose own error no signature knows, then the ignored traceback at exit:
    # the traceback's error must not be called the cause; the job stays unexplained.
    lines = ["##[group]Run python smoke_test.py", "##[endgroup]", "checking the recipe API"]
    result = run_log(github_log([*lines, *IGNORED_TRACEBACK, STEP_EXIT]))
    assert result.root_cause is not None
    assert result.root_cause.signature.id == "gha-process-exit-code"
    ignored = next(m for m in result.matches if m.text.startswith("RuntimeError: Event loop"))
    assert ignored.level == ranking.IGNORED
    assert any("Python ignored" in w.reason for w in result.weighed)
    # The traceback ends at its exception: an error printed after it is an error again
    # (pytorch/pytorch's test_cuda, pytorch/test-infra's test_file_failed_wrapper fixture).
    error = "AttributeError: module 'torch._C' has no attribute '_cuda_getAllocatorBackend'"
    result = run_log(github_log([*lines, *IGNORED_TRACEBACK, error, STEP_EXIT]))
    assert result.root_cause is not None and result.root_cause.text == error
    assert result.root_cause.level is None


def test_a_header_wrapper_stands_for_the_error_printed_below_it() -> None:
    # ninja prints `FAILED: <target>` before the failed command's output. Its header (ROCm's
    # legacy-rocm-build#5788) above a Python error only a catch-all of lower priority knows
    # (pytorch/test-infra's fixture error_log1: a script's timeout). Lines of two logs
    # joined: the rule is about their order.
    header = "FAILED: [code=1] module_aiter_enum.so"
    error = "TimeoutError: The read operation timed out"
    stopped = "ninja: build stopped: subcommand failed."
    result = run_log(github_log(["##[group]Run make", header, error, stopped, STEP_EXIT]))
    assert result.root_cause is not None and result.root_cause.text == error
    reasons = {w.match.text: w.reason for w in result.weighed}
    assert f"defers to `{error}` below it" in reasons[header]
    # An error above a wrapper still comes first: the wrapper looks below only for want of it.
    result = run_log(github_log(["##[group]Run make", error, stopped, header, STEP_EXIT]))
    reasons = {w.match.text: w.reason for w in result.weighed}
    assert f"defers to `{error}` above it" in reasons[stopped]


def test_line_score_skips_what_only_looks_like_an_error() -> None:
    # Real lines (LogChunks): git/git's test list, jgm/pandoc's build, NancyFx/Nancy's MSBuild
    # summary, SwiftLint on realm/SwiftLint, Travis' bookkeeping.
    assert line_score("[16:29:36] t3020-ls-files-error-unmatch.sh ....... ok       29 ms") == 0
    assert line_score("[ 80 of 180] Compiling Text.Pandoc.Error ( src/Text/Pandoc/Error.hs )") == 0
    assert line_score("    0 Error(s)") == 0
    assert line_score("Tests run: 12, Failures: 0, Errors: 0, Skipped: 0") == 0
    assert line_score("Linting 'Error.swift' (12/180)") == 0
    assert line_score("travis_fold:end:install.1") == 0
    assert line_score("  --fail-fast      stop at the first failure") == 0
    # ... and ranks what is one.
    assert line_score(GCC) == 3
    assert line_score("TypeError: Cannot read property 'x' of undefined") == 3
    assert line_score("Host key verification failed.") == 2
    assert line_score("npm ERR! Test failed.  See above for more details.") == 1
    # A script's own cross mark (a performance budget check on GitHub Actions, 2025-09-09).
    assert line_score("\u274c Performance Budget Violations:") == 2
    # A CLI's own cross (Chromatic's, in jeffreymoya/photoeditor's `gh run view` copy).
    assert line_score("10:37:33.900 \u2716 Missing project token") == 2
    assert line_score("  \U0001f4e6 Large chunk: assets/chunk-B0WWTYqB.js (433.9KB)") == 0


def test_fallback_reads_the_failing_step_and_prefers_its_first_errors() -> None:
    noise = [f"warning: unused variable 'x{n}'" for n in range(3)]
    # A shape no signature knows: the fallback's own case.
    errors = [f"Error: the frobnicator {n} refused to start" for n in range(12)]
    lines = [
        *travis_step("apt-get install foo", ["E: cleanup error earlier, exit 0"], 0),
        *travis_step("./build.sh", [*noise, *errors, "Build failed."], 1),
        "Done. Your build exited with 1.",
    ]
    result = run_without(log_of(lines), "ci-travis-command-exited")
    assert result.root_cause is None
    shown = [f.text for f in result.fallback_lines]
    assert len(shown) == ranking.FALLBACK_LINES
    assert shown == errors[: ranking.FALLBACK_LINES]


def test_fallback_keeps_a_failing_steps_last_words() -> None:
    lines = [
        *travis_step("export PATH=$JAVA_HOME/bin:$PATH", [], 0),
        *travis_step("$TRAVIS_BUILD_DIR/install-jdk.sh --feature 11", [PERMISSION], 126),
        "Done. Your build exited with 1.",
    ]
    result = run_without(log_of(lines), "shell-permission-denied", "ci-travis-command-exited")
    assert [(f.line, f.text) for f in result.fallback_lines] == [(4, PERMISSION)]


def test_a_github_steps_header_is_not_its_last_words() -> None:
    # GitHub writes a step's script, shell and environment under `##[group]Run`, up to its
    # first `##[endgroup]`: a step that printed one line before failing has that line as its
    # last words, not `LD_LIBRARY_PATH` above it (django's spelling job, LogSage's set);
    # one that printed nothing has none.
    header = [
        "##[group]Run cd docs",
        "\x1b[36;1mcd docs\x1b[0m",
        "shell: /usr/bin/bash -e {0}",
        "env:",
        "  pythonLocation: /opt/hostedtoolcache/Python/3.13.2/x64",
        "  LD_LIBRARY_PATH: /opt/hostedtoolcache/Python/3.13.2/x64/lib",
        "##[endgroup]",
    ]
    said = "the frobnicator refused to start"
    for output, expected in (([said], [(8, said)]), ([], [])):
        lines = [*header, *output, "##[error]Process completed with exit code 1."]
        result = run_log(github_log(lines))
        assert [(f.line, f.text) for f in result.fallback_lines] == expected


def test_a_failure_seen_again_in_the_failing_step_is_placed_there() -> None:
    # FindBugs killed (`Java returned: 137`) in a step that went on (`|| true`), then again in
    # the failing one (dropwizard metrics-spring on Travis CI, BugSwarm's analyzer fixtures):
    # the failing step's occurrence is the root cause, not a retry that recovered.
    goal = (
        "[ERROR] Failed to execute goal org.codehaus.mojo:findbugs-maven-plugin:2.5.2:findbugs"
        " (findbugs) on project metrics-spring: Execution findbugs of goal"
        " org.codehaus.mojo:findbugs-maven-plugin:2.5.2:findbugs failed: Java returned: 137"
        " -> [Help 1]"
    )
    lines = [
        *travis_step("mvn install -DskipTests=true || true", ["[INFO] BUILD FAILURE", goal], 0),
        *travis_step("mvn verify", ["[INFO] BUILD FAILURE", goal], 1),
        "Done. Your build exited with 1.",
    ]
    root = run_log(log_of(lines)).root_cause
    assert root is not None and root.signature.id == "java-maven-goal-failed"
    assert (root.line, root.count) == (7, 2)


def test_a_traced_exit_is_not_the_guess() -> None:
    # A script run with `set -x` traces its own `exit 1` after printing why: the guess is
    # the message above the trace.
    said = "Version 1.2.3 is already published"
    lines = [
        "##[group]Run ./scripts/check-version.sh",
        "##[endgroup]",
        "+ grep -q 1.2.3 published.txt",
        said,
        "+ exit 1",
        "##[error]Process completed with exit code 1.",
    ]
    result = run_log(github_log(lines))
    texts = [f.text for f in result.fallback_lines]
    assert texts[ranking.best_guess_index(texts) or 0] == said


def test_fallback_is_bounded_per_step() -> None:
    errors = [f"error: thing {n} broke" for n in range(5000)]
    result = run_log(log_of(travis_step("./build.sh", errors, 1)))
    shown = [f.text for f in result.fallback_lines]
    assert shown == errors[: ranking.FALLBACK_LINES]


def test_json_reason_and_explain() -> None:
    window = ROOT / "tests" / "accuracy" / "c" / "travis-gcc-storage-size.log"
    command = [sys.executable, "-m", "triage_bot", "triage", str(window)]
    done = subprocess.run(
        [*command, "--format", "json", "--explain"], capture_output=True, text=True, check=True
    )
    job = json.loads(done.stdout)["jobs"][0]
    assert job["root_cause"]["reason"].startswith("specific error above the wrapper `make[1]")
    assert job["candidates"][0]["signature"] == job["root_cause"]["signature"]
    assert set(job["candidates"][0]["score"]) == set(ranking.SCORE_PARTS)
    text = subprocess.run(
        [*command, "--format", "text", "--explain"], capture_output=True, text=True, check=True
    ).stdout
    assert "Candidates weighed for job" in text
    assert "a wrapper line: defers to" in text


def test_the_step_the_api_says_failed_wins_over_a_later_failing_step() -> None:
    # A build step fails, then an `if: failure()` upload step fails too (its own network
    # error, of a higher priority): with the API's failed step, the build's error wins.
    lines = [
        ("2026-10-21T09:10:00.0000000Z", "##[group]Run make"),
        ("2026-10-21T09:10:05.0000000Z", GCC),
        ("2026-10-21T09:10:06.0000000Z", "##[error]Process completed with exit code 2."),
        ("2026-10-21T09:10:07.0000000Z", "##[group]Run ./upload-logs.sh"),
        ("2026-10-21T09:10:08.0000000Z", "curl: (6) Could not resolve host: example.com"),
        ("2026-10-21T09:10:09.0000000Z", "##[error]Process completed with exit code 6."),
    ]
    data = "".join(f"{stamp} {text}\n" for stamp, text in lines).encode()
    started, ended = (logs.parse_timestamp(f"2026-10-21T09:10:0{s}Z") for s in (0, 6))
    build = logs.Step(3, started, ended)
    for step, expected in ((None, "curl: (6)"), (build, GCC)):
        job = JobClassifier(compiled(), "job", failing_step=step)
        job.feed(data)
        root = job.finish().root_cause
        assert root is not None and root.text.startswith(expected)


def test_step_ends_are_bounded() -> None:
    steps = [travis_step(f"step {n}", [], n % 2) for n in range(ranking.MAX_SECTIONS + 50)]
    result = run_log(log_of([line for step in steps for line in step]))
    assert result.steps is not None
    assert len(result.steps.ends) <= ranking.MAX_SECTIONS + 1
    failing = result.steps.failing_end
    assert failing is not None and failing.text == 'The command "step 5049" exited with 1.'


def test_a_step_that_passed_ranks_below_even_when_no_step_is_marked_failing() -> None:
    # A log cut short (a time-out, as in bitcoin/bitcoin build 567191495 of LogChunks): the
    # step that said exit 0 passed; the last, unfinished one holds the failure.
    dns = "curl: (6) Could not resolve host: cli-assets.heroku.com"
    lines = [*travis_step("curl https://cli-assets.heroku.com/install.sh | sh", [dns], 0), GCC]
    result = run_log(log_of(lines))
    assert result.root_cause is not None and result.root_cause.text == GCC
    network = next(w for w in result.weighed if w.match.text == dns)
    assert (
        network.score[SCORE_PARTS.index("step")] == 0 and "in a step that passed" in network.reason
    )


def test_with_the_whole_catalog_the_failing_steps_last_words_are_the_root_cause() -> None:
    lines = [
        *travis_step("export PATH=$JAVA_HOME/bin:$PATH", [], 0),
        *travis_step("$TRAVIS_BUILD_DIR/install-jdk.sh --feature 11", [PERMISSION], 126),
        "Done. Your build exited with 1.",
    ]
    root = run_log(log_of(lines)).root_cause
    assert root is not None and (root.line, root.text) == (4, PERMISSION)


def _compared(failing: str, passing: str) -> JobResult:
    log = passing.encode()
    job = JobClassifier(compiled(), "job", passing=PassingFile(lambda: [log]))
    job.feed(failing.encode())
    return job.finish()


PY_ERROR = "E   ModuleNotFoundError: No module named 'flaky_plugin'"


def test_a_root_cause_the_passing_run_also_printed_loses_to_a_new_one() -> None:
    failing = log_of(travis_step("make test", [PY_ERROR, "", GCC, MAKE_INNER], 2))
    # Without a comparison the compiler error wins (the nearest the end among equals).
    alone = run_log(failing)
    assert alone.root_cause is not None and alone.root_cause.new is None
    assert alone.root_cause.text == GCC
    # The passing run printed the compiler's line (at another time): it is not the cause.
    passing = log_of(["2024-01-02T03:04:05.1234567Z " + GCC, "all good"])
    result = _compared(failing, passing)
    root = result.root_cause
    assert root is not None and root.new is True and root.text != GCC
    old = next(m for m in result.also if m.text == GCC)
    assert old.new is False and ranking.ALSO_IN_PASSING in old.reason
    assert all(m.new is not None for m in result.matches)


def test_a_bare_failure_stands_for_a_new_error_its_script_let_pass_in_an_earlier_step() -> None:
    # hashicorp/terraform's "Build Terraform CLI Packages" (via labri-progress/cidiff,
    # breakages_dump run 390): `git describe` failed inside a step that went on, and a later
    # step failed on the empty version with nothing of its own to show.
    describe = "fatal: No tags can describe '60a189413d732eccd0158591618422c7cad1aed7'."
    stamp = "2022-05-19T22:22:36.7230713Z "
    lines = [
        "##[group]Run git describe --first-parent",
        describe,
        "Try --always, or create some tags.",
        '##[group]Run # Trim the "v" prefix, if any.',
        "##[endgroup]",
        "##[error]Process completed with exit code 1.",
    ]
    failing = "".join(stamp + line + "\n" for line in lines)
    alone = run_log(failing)
    assert alone.root_cause is not None and alone.root_cause.signature.wraps
    passing = "".join(stamp + line + "\n" for line in ["##[group]Run git describe", "v1.3.0"])
    root = _compared(failing, passing).root_cause
    assert root is not None and root.text == describe and root.new is True


def test_best_guess_lines_are_chosen_among_the_new_lines() -> None:
    old = [f"ERROR: flaky thing {n} failed to start" for n in range(10)]
    new = "ERROR: the widget frobnicator exploded"
    failing = log_of(travis_step("./run", [*old, new, *old], 1))
    plain = run_log(failing)
    assert new not in [f.text for f in plain.fallback_lines]  # crowded out by the others
    result = _compared(failing, log_of(travis_step("./run", old, 0)))
    assert [f.text for f in result.fallback_lines] == [new]
    assert [f.new for f in result.fallback_lines] == [True]


# A GitHub Actions job whose failing step is a JavaScript action's tool (@actions/exec) or a
# Docker container action, not a `run:` script: the runner's own lines (the first from
# BugSwarm's fixture of a FormidableLabs/victory job, tests/analyzer/github_data/javascript/
# jest/2544418976.log in BugSwarm/bugswarm; the second from digitalocean/action-doctl#23).
ACTION_END = "##[error]The process '/usr/bin/xvfb-run' failed with exit code 1"
DOCKER_END = "##[error]Docker run failed with exit code 1"


def test_an_action_s_exit_ends_the_failing_step() -> None:
    assert step_end(ACTION_END) is True
    assert step_end(DOCKER_END) is True
    # Without `##[error]` it is a try that @actions/exec retries, not the step's end.
    assert step_end("The process '/usr/bin/git' failed with exit code 128") is None
    log = log_of(
        [
            "##[group]Run npm test",
            "##[endgroup]",
            GCC,
            "##[error]Process completed with exit code 1.",
            "##[group]Run GabrielBB/xvfb-action@v1",
            "##[endgroup]",
            "ModuleNotFoundError: No module named 'xvfbwrapper'",
            ACTION_END,
        ]
    )
    result = run_log(log)
    assert result.steps is not None and result.steps.failing_end is not None
    assert result.steps.failing_end.line == 8
    assert result.root_cause is not None and result.root_cause.line == 7


# openpilot's unit tests (BugSwarm's fixture tests/analyzer/github_data/python/
# 2516961170-orig.log, a commaai/openpilot job): scons' git call fails at the step's start,
# the step goes on for 12,000 lines and a test fails at its end.
UNSAFE_REPO = "fatal: unsafe repository ('/tmp/openpilot/panda' is owned by someone else)"
UNITTEST_FAIL = "FAIL: test_no_duplicate_fw_versions (tests.test_fw_fingerprint.TestFwFingerprint)"
UNITTEST_SUMMARY = "FAILED (failures=1, skipped=176)"


def test_a_test_failing_below_an_error_the_step_went_on_from_is_the_cause() -> None:
    filler = [f"test_{i} (tests.test_x.TestX) ... ok" for i in range(200)]
    log = log_of(
        [
            "##[group]Run docker run openpilot-base unittest",
            "##[endgroup]",
            UNSAFE_REPO,
            *filler,
            UNITTEST_FAIL,
            "AssertionError: False is not true : Duplicate FW versions found",
            UNITTEST_SUMMARY,
            "##[error]Process completed with exit code 1.",
        ]
    )
    result = run_log(log)
    assert result.root_cause is not None and result.root_cause.text == UNITTEST_FAIL
    gone_on = next(w for w in result.weighed if w.match.text == UNSAFE_REPO)
    assert "went on to run tests" in gone_on.reason
    # The same error with no test failing below it is the cause.
    alone = run_log(log_of([UNSAFE_REPO, "##[error]Process completed with exit code 1."]))
    assert alone.root_cause is not None and alone.root_cause.text == UNSAFE_REPO


def test_a_crash_above_the_failing_test_stays_the_cause() -> None:
    # A segfault or a killed process can be why the test failed: the step did not go on from it.
    log = log_of(
        [
            "##[group]Run python -m unittest",
            "##[endgroup]",
            "Fatal Python error: Segmentation fault",
            UNITTEST_FAIL,
            UNITTEST_SUMMARY,
            "##[error]Process completed with exit code 1.",
        ]
    )
    result = run_log(log)
    assert result.root_cause is not None and result.root_cause.text != UNITTEST_FAIL


# broadinstitute/picard's barclayTest on GitHub Actions (BugSwarm's fixture tests/analyzer/
# github_data/gradle/14294971046-orig.log): Gradle's outer line comes first, the task below.
GRADLE_REPORT = [
    "FAILURE: Build failed with an exception.",
    "",
    "* What went wrong:",
    "Execution failed for task ':barclayTest'.",
    "> There were failing tests. See the report at: file:///home/runner/work/picard/picard/build/reports/tests/barclayTest/index.html",
    "##[error]Process completed with exit code 1.",
]


def test_a_wrapper_stands_only_for_an_inner_wrapper_that_says_as_much() -> None:
    result = run_log(log_of(GRADLE_REPORT))
    assert result.root_cause is not None
    assert result.root_cause.text == "Execution failed for task ':barclayTest'."
    # make's inner `make[1]` (same signature, same priority) still stands for `make`.
    make = run_log(log_of([MAKE_INNER, MAKE_OUTER, MAKE_FAILED]))
    assert make.root_cause is not None and make.root_cause.text == MAKE_INNER


# Kong/insomnia's smoke tests on GitHub Actions (LogSage's public pairs, ByteLuo1029/dataset
# @4049176 dataset/experiment_dataset/insomnia/pair_3): Playwright's annotation of the error,
# then npm's wrapper for the script that ran it (priority 32 over the annotation's 14).
PLAYWRIGHT_UNDER_NPM = [
    "##[error]First argument must use the object destructuring pattern: _",
    "",
    "   at ../playwright/test.ts:50",
    "Failed with exit code: 1",
    "npm error Lifecycle script `test:package` failed with error:",
    "npm error code 255",
    "npm error command failed",
    "##[error]Process completed with exit code 255.",
]


def test_a_tool_runners_wrapper_stands_for_the_annotation_above_it() -> None:
    result = run_log(github_log(PLAYWRIGHT_UNDER_NPM))
    assert result.root_cause is not None
    assert result.root_cause.text == PLAYWRIGHT_UNDER_NPM[0]


# rasbt/LLMs-from-scratch's notebook tests on GitHub Actions (LogSage's public pairs,
# ByteLuo1029/dataset @4049176 dataset/train_Drain3_dataset/LLMs-from-scratch/pair_5): nbformat
# tries a file object's `read`, catches the AttributeError, and parses the text as JSON.
HANDLED_CHAIN = [
    "_____ ERROR collecting ch05/01_main-chapter-code/exercise-solutions.ipynb ______",
    ".venv/lib/python3.10/site-packages/nbformat/__init__.py:169: in read",
    "    buf = fp.read()",
    "E   AttributeError: 'str' object has no attribute 'read'",
    "",
    "During handling of the above exception, another exception occurred:",
    ".venv/lib/python3.10/site-packages/nbformat/reader.py:19: in parse_json",
    "    nb_dict = json.loads(s, **kwargs)",
    "E   json.decoder.JSONDecodeError: Expecting ',' delimiter: line 272 column 5 (char 8182)",
    "",
    "The above exception was the direct cause of the following exception:",
    "##[error]Process completed with exit code 2.",
]


def test_an_exception_being_handled_ranks_below_the_one_raised_while_handling_it() -> None:
    result = run_log(github_log(HANDLED_CHAIN))
    assert result.root_cause is not None
    assert result.root_cause.text == HANDLED_CHAIN[8]
    handled = next(m for m in result.matches if "AttributeError" in m.text)
    assert handled.level == ranking.HANDLED
    assert any("During handling" in w.reason for w in result.weighed)
    # Far above the header (another test's failure), an exception keeps its rank.
    far = [HANDLED_CHAIN[3], *["ok"] * 5, *HANDLED_CHAIN[5:]]
    result = run_log(github_log(far))
    assert next(m for m in result.matches if "AttributeError" in m.text).level is None


# binary-husky/gpt_academic's Docker build on GitHub Actions (LogSage's public pairs,
# ByteLuo1029/dataset @4049176 dataset/experiment_dataset/gpt_academic/pair_4): pip's failure
# inside the RUN step, then its 186 lines of build output (stood for here by numbered lines:
# the rule is about the distance), then BuildKit's summary of the step.
PIP_FAILED = "#9 471.7   \u00d7 Preparing metadata (pyproject.toml) did not run successfully."
BUILDKIT_FAILED = (
    '#9 ERROR: process "/bin/bash -c pip install --break-system-packages openai numpy" '
    "did not complete successfully: exit code: 1"
)


def test_a_wrapper_with_nothing_near_it_stands_for_the_nearest_error_above_in_its_step() -> None:
    output = [f"#9 471.7       build output line {n}" for n in range(150)]
    lines = ["##[group]Run docker/build-push-action@v6", "##[endgroup]", PIP_FAILED, *output]
    result = run_log(github_log([*lines, BUILDKIT_FAILED, STEP_EXIT]))
    assert result.root_cause is not None
    assert result.root_cause.signature.id == "python-pip-subprocess-failed"
    # In another step, it is not what this wrapper ends.
    other_step = ["##[group]Run pip install .", "##[endgroup]", PIP_FAILED, "done"]
    build = ["##[group]Run docker/build-push-action@v6", "##[endgroup]", *output]
    result = run_log(github_log([*other_step, *build, BUILDKIT_FAILED, STEP_EXIT]))
    assert result.root_cause is not None
    assert result.root_cause.signature.id == "docker-buildkit-run-failed"
