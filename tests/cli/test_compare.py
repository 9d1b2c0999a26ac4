"""`triage FAIL --compare PASS` on real pass/fail pairs of public logs (tests/compare_pairs,
sources in its SOURCES.md): the lines the passing run also printed lose, and what is shown
hits the lines a person labelled (issue #11)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

from cli.test_cli import report, triage
from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import CompiledCatalog, JobClassifier, classify
from triage_bot.core.compare import PassingFile

PAIRS = ROOT / "tests" / "compare_pairs"
INDEX = json.loads((PAIRS / "index.json").read_text(encoding="utf-8"))["logs"]
JOINER = "\u2060"  # what the comment puts in `#12`, `@x` and links so that GitHub links none


def _pair(prefix: str) -> dict[str, Any]:
    return next(row for row in INDEX if row["file"].startswith(prefix))


def _labelled(row: dict[str, Any], line: int) -> bool:
    return any(first <= line <= last for first, last in row["ranges"])


def _compared(row: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = report(
        str(PAIRS / row["file"]), "--compare", str(PAIRS / row["passing"])
    )["jobs"][0]
    return job


def _ranked(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [job["root_cause"], *job["also"]] if job["root_cause"] else []


@pytest.mark.parametrize("row", INDEX, ids=lambda row: row["file"].split("/")[0])
def test_a_shown_line_hits_the_labelled_lines(row: dict[str, Any]) -> None:
    job = _compared(row)
    assert job["reference"] == {"label": "pass.log.gz", "url": None}
    shown = [m["line"] for m in _ranked(job)[:1]] + [f["line"] for f in job["fallback_lines"]]
    assert any(_labelled(row, line) for line in shown), shown
    # A line the passing run printed is never a best guess, and ranks below every new one.
    assert all(f["new"] is True for f in job["fallback_lines"])
    flags = [m["new"] for m in _ranked(job)]
    assert flags == sorted(flags, reverse=True), flags


def test_a_decoy_the_passing_run_also_printed_loses_the_root_cause() -> None:
    # numpy's feature probes print compiler errors in every run, then its tests run and one
    # fails. Alone, the step's going on to run the tests ranks the probes below the failing
    # test; with the passing run, they are also "also in the passing run".
    row = _pair("25-")
    alone = report(str(PAIRS / row["file"]))["jobs"][0]
    assert _labelled(row, alone["root_cause"]["line"])
    assert alone["root_cause"]["new"] is None and alone["reference"] is None
    decoy = alone["also"][0]
    assert decoy["signature"].startswith("cpp-") and not _labelled(row, decoy["line"])
    assert "went on to run tests" in decoy["reason"]
    job = _compared(row)
    root = job["root_cause"]
    assert _labelled(row, root["line"]) and root["new"] is True
    compared = next(m for m in job["also"] if m["line"] == decoy["line"])
    assert compared["new"] is False and "also in the passing run" in compared["reason"]


def test_a_match_the_passing_run_also_printed_is_demoted() -> None:
    # joblib's conda `PackagesNotFoundError` (line 596) is printed by the passing run too.
    row = _pair("03-")
    alone = _ranked(report(str(PAIRS / row["file"]))["jobs"][0])
    job = _ranked(_compared(row))
    before = [m["line"] for m in alone].index(596)
    after = [m["line"] for m in job].index(596)
    assert after > before
    assert job[after]["new"] is False and "also in the passing run" in job[after]["reason"]
    assert alone[before]["new"] is None
    # Below every new match: the ones that ranked under it before now rank above it.
    assert any(m["new"] is True for m in job[:after])
    assert all(m["new"] is False for m in job[after:])


def test_best_guess_lines_are_only_the_new_ones() -> None:
    # An infrastructure failure (Docker's zfs mount error) in the last two lines of a log the
    # passing run printed too, triaged with a catalog that lacks its signature (the built-in
    # one explains it): without the comparison the best guesses include lines that hold only
    # "error" words; with it, only the new lines are.
    row = _pair("23-")
    catalog = CompiledCatalog(load_catalog().without(["docker-storage-driver-error"]))
    failing, passing = _chunks(PAIRS / row["file"]), _chunks(PAIRS / row["passing"])
    alone = classify(failing, catalog)
    assert not alone.matches or alone.fallback_lines  # unexplained: best guesses shown
    assert not all(_labelled(row, f.line) for f in alone.fallback_lines)
    job = JobClassifier(catalog, "job", passing=PassingFile(lambda: passing))
    for chunk in _chunks(PAIRS / row["file"]):
        job.feed(chunk)
    compared = job.finish()
    assert compared.fallback_lines
    assert all(_labelled(row, f.line) and f.new for f in compared.fallback_lines)


def _chunks(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes())
    return [data[at : at + 65536] for at in range(0, len(data), 65536)]


def test_compare_takes_a_folder_of_passing_logs_with_the_same_names(tmp_path: Path) -> None:
    failing, passing = tmp_path / "failing", tmp_path / "passing"
    failing.mkdir()
    passing.mkdir()
    row = _pair("25-")
    shutil.copy(PAIRS / row["file"], failing / "numpy.log.gz")
    shutil.copy(PAIRS / row["passing"], passing / "numpy.log.gz")
    shutil.copy(PAIRS / _pair("03-")["file"], failing / "joblib.log.gz")
    jobs = {job["name"]: job for job in report(str(failing), "--compare", str(passing))["jobs"]}
    assert jobs["numpy"]["reference"] == {"label": "numpy.log.gz", "url": None}
    assert _labelled(row, jobs["numpy"]["root_cause"]["line"])
    assert jobs["joblib"]["reference"] is None
    assert "not compared" in jobs["joblib"]["note"]
    comment = triage(str(failing), "--compare", str(passing), "--format", "markdown").stdout
    assert "compared with numpy.log.gz" in comment
    assert "joblib: not compared: no passing log of the same name" in comment


def test_compare_is_refused_where_it_cannot_apply(tmp_path: Path) -> None:
    row = _pair("25-")
    two = triage(
        str(PAIRS / row["file"]),
        str(PAIRS / _pair("03-")["file"]),
        "--compare",
        str(PAIRS / row["passing"]),
    )
    assert two.returncode == 2 and "give a folder of passing logs" in two.stderr
    url = triage("https://github.com/o/r/actions/runs/1", "--compare", str(tmp_path))
    assert url.returncode == 2 and "--compare is for log files" in url.stderr
