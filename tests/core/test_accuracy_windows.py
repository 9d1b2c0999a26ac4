"""The accuracy benchmark (bench/accuracy.py): its scorer, and a floor on real log windows.

tests/accuracy/ holds short excerpts of real CI logs from public issue threads (each names
its source in a `#! source:` first line) with the lines that say why the build failed
labelled in index.json. The CLI runs on each, as `bench/accuracy.py tests/accuracy` does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import accuracy  # noqa: E402

WINDOWS = ROOT / "tests" / "accuracy"
# Top-1 hits on tests/accuracy as measured on 2026-12-03: 16 of 32 windows with 165
# signatures, 29 with 347 and the reading-order ranking, 32 of 32; then 48 of 48 with the
# newcomer kinds' windows (Jest, Go subtests, surefire, git auth, segfaults, checkout).
# A regression floor: raise it as the catalog and the ranking get better, never lower it to pass.
TOP1_FLOOR = 48


def _cli_scores(folder: Path) -> list[accuracy.Scored]:
    return accuracy.score(folder, accuracy.cli_triager(accuracy.default_cli(), 60.0), jobs=2)


def test_real_windows_keep_their_top1_floor() -> None:
    results = _cli_scores(WINDOWS)
    misses = [r.labelled.file for r in results if not r.outcome.top1]
    assert [r.triage.error for r in results if r.triage.error] == []
    assert accuracy.totals(results)["top-1"] >= TOP1_FLOOR, misses


def test_windows_are_short_sourced_and_labelled_in_range() -> None:
    index = accuracy.load_index(WINDOWS)
    assert len(index) >= 20
    for row in index:
        lines = (WINDOWS / row.file).read_text(encoding="utf-8").split("\n")[:-1]
        assert lines[0].startswith("#! source: https://github.com/"), row.file
        assert len(lines) <= 61, row.file  # the source line and at most 60 of the log
        assert row.ranges and all(2 <= a <= b <= len(lines) for a, b in row.ranges), row.file


def _write_index(folder: Path, logs: dict[str, tuple[str, list[list[int]], str]]) -> None:
    rows = []
    for name, (text, ranges, label) in logs.items():
        (folder / f"{name}.log").write_text(text, encoding="utf-8")
        rows.append({"file": f"{name}.log", "language": name, "ranges": ranges, "label": label})
    (folder / "index.json").write_text(json.dumps({"logs": rows}), encoding="utf-8")


def test_scorer_counts_a_hit_a_miss_an_any_and_a_none(tmp_path: Path) -> None:
    missing = "collecting\nrunning\nModuleNotFoundError: No module named 'yaml'\ndone\n"
    _write_index(
        tmp_path,
        {
            "hit": (missing, [[3, 3]], ""),
            # The label is elsewhere: the root cause (line 3) misses, nothing else hits.
            "miss": (missing, [[1, 1]], "collecting"),
            # No signature knows this line; a best-guess line shows it: any, not top-1.
            "any": ("step one\nthe flux widget reported an ERROR and stopped\nbye\n", [[2, 2]], ""),
            "none": ("all good\nnothing to see\n", [[1, 1]], "all good"),
            # Only the runner's catch-all matches: the table shows the best-guess line.
            "wrapped": (
                "##[group]Run ./mods.sh\n##[endgroup]\nmod-a\n"
                "modsync: error: unknown mod id 'xytronix:forgotten'\n"
                "##[error]Process completed with exit code 5.\n",
                [[4, 4]],
                "",
            ),
        },
    )
    by_name = {r.labelled.language: r.outcome for r in _cli_scores(tmp_path)}
    assert by_name["hit"].top1 and by_name["hit"].any and not by_name["hit"].none
    assert not by_name["miss"].top1 and not by_name["miss"].any
    assert not by_name["any"].top1 and by_name["any"].any and by_name["any"].guess
    # A root cause that explains its job is what the table shows: no guess beside it.
    assert not by_name["miss"].guess and by_name["hit"].guess
    assert not by_name["wrapped"].top1 and by_name["wrapped"].guess
    assert by_name["none"].none and not by_name["none"].any
    assert not any(o.err for o in by_name.values())
    # The baseline's last `rror` line is line 3 in "hit", and nothing in "none".
    assert by_name["hit"].naive and not by_name["none"].naive


def test_text_of_a_reported_line_hits_when_it_and_the_label_contain_one_another() -> None:
    label = "\x1b[31mE   ModuleNotFoundError:\x1b[0m   No module named 'yaml'"
    row = accuracy.Labelled("x.log", "Python", ((9, 9),), label)
    assert row.hit(accuracy.Reported(40, "ModuleNotFoundError: No module named 'yaml'"))
    assert row.hit(accuracy.Reported(9, "anything"))  # in the range
    assert not row.hit(accuracy.Reported(40, "yaml"))  # too short to count as text
    assert not row.hit(accuracy.Reported(None, "ImportError: cannot import name 'x'"))
    assert not row.hit(None)


def test_a_crash_or_a_bad_report_is_an_error_and_a_miss(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("FAILED x\n", encoding="utf-8")
    crashed = accuracy.run_cli(Path(sys.executable), log, 10.0)  # python triage ... fails
    assert crashed.error is not None and crashed.error.startswith("exit ")
    assert accuracy.parse_report(b"not json").error is not None
    assert accuracy.parse_report(b'{"jobs": []}').error == "no job in the report"
    row = accuracy.Labelled("x.log", "?", ((1, 1),), "FAILED x")
    outcome = accuracy.judge(row, crashed, accuracy.naive_line(log))
    assert outcome.err and not outcome.top1 and not outcome.none and outcome.naive
