"""The offline CLI as a newcomer runs it: a real process on the shipped examples."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLES, ROOT


def triage(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", "triage", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def report(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = triage(*args, "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def test_the_three_seed_failures() -> None:
    data = report(str(EXAMPLES))
    groups = {g["signature"]: g for g in data["groups"]}
    module = groups["python-module-not-found"]
    assert module["captures"] == {"module": "aiter.ops.triton.attention.mla_decode"}
    assert len(module["jobs"]) == 5 and all(j.startswith("kimi-k3-") for j in module["jobs"])
    assert "rust-too-many-open-files" in groups
    kwarg = groups["python-unexpected-keyword-argument"]
    assert kwarg["captures"] == {
        "callable": "KVTransferTensors.__init__",
        "argument": "block_regions",
    }
    jobs = {j["name"]: j for j in data["jobs"]}
    unit = jobs["unit-tests-mi350x"]["root_cause"]
    assert unit["signature"] == "python-unexpected-keyword-argument"
    assert unit["count"] == 14  # 7 tracebacks and 7 summary lines


def test_json_lines_are_lines_of_the_file_as_given() -> None:
    data = report(str(EXAMPLES))
    for job in data["jobs"]:
        path = EXAMPLES / f"{job['name']}.log"
        lines = path.read_text(encoding="utf-8-sig").splitlines()
        root = job["root_cause"]
        assert root["text"] in lines[root["line"] - 1]
        for also in job["also"]:
            assert also["text"] in lines[also["line"] - 1]


def test_json_contract_fields() -> None:
    data = report(str(EXAMPLES / "unit-tests-mi350x.log"))
    assert set(data) >= {"jobs", "groups"}
    job = data["jobs"][0]
    assert set(job) >= {"name", "root_cause", "also", "fallback_lines"}
    assert set(job["root_cause"]) >= {"signature", "category", "captures", "line", "text"}
    assert set(data["groups"][0]) >= {"signature", "captures", "jobs"}


def test_json_says_whether_the_root_cause_explains_the_job(tmp_path: Path) -> None:
    assert report(str(EXAMPLES / "unit-tests-mi350x.log"))["jobs"][0]["explains"] is True
    # Only the runner's exit line matched (a catch-all): the table shows a best-guess line.
    # The script's message is laravel/laravel's build check (LogSage's pairs, ByteLuo1029/dataset
    # @4049176 dataset/experiment_dataset/laravel/pair_1).
    log = tmp_path / "lint.log"
    log.write_text(
        "##[group]Run ./check.sh\n##[endgroup]\nERROR: manifest.json not found!\n"
        "##[error]Process completed with exit code 1.\n",
        encoding="utf-8",
    )
    job = report(str(log))["jobs"][0]
    assert job["root_cause"]["signature"] == "gha-process-exit-code"
    assert job["explains"] is False
    assert job["fallback_lines"][0]["text"] == "ERROR: manifest.json not found!"


def test_markdown_comment_shows_evidence_and_fix() -> None:
    done = triage(str(EXAMPLES), "--format", "markdown")
    assert done.returncode == 0
    body = done.stdout
    assert "aiter.ops.triton.attention.mla_decode" in body
    assert "from .triton_mla import TritonMLAMetadataBuilder" in body  # the import chain
    assert "--ulimit nofile=" in body and "LimitNOFILE" in body and "ulimit -n" in body
    assert 'git log -S "block_regions"' in body
    assert "5 jobs" in body


def test_stdin_gzip_and_zip(tmp_path: Path) -> None:
    log = (EXAMPLES / "unit-tests-mi350x.log").read_bytes()
    from_stdin = triage("-", "--format", "json", stdin=log)
    assert json.loads(from_stdin.stdout)["jobs"][0]["name"] == "stdin"
    packed = tmp_path / "unit.log.gz"
    packed.write_bytes(gzip.compress(log))
    archive = tmp_path / "logs_123.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("build (3.11).txt", log)
    data = report(str(packed), str(archive))
    assert [j["name"] for j in data["jobs"]] == ["unit", "build (3.11)"]
    assert all(
        j["root_cause"]["signature"] == "python-unexpected-keyword-argument" for j in data["jobs"]
    )


def test_unusable_input_is_a_clear_error(tmp_path: Path) -> None:
    missing = triage(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    empty = triage(str(tmp_path))
    assert empty.returncode == 2 and "holds no log files" in empty.stderr
    bad_catalog = triage(str(EXAMPLES), "--catalog", str(tmp_path / "nowhere"))
    assert bad_catalog.returncode == 2 and "not a folder" in bad_catalog.stderr


def test_extra_catalog_and_broken_signature(tmp_path: Path) -> None:
    (tmp_path / "mine.yml").write_text("id: [\n", encoding="utf-8")
    done = triage(
        str(EXAMPLES / "unit-tests-mi350x.log"), "--catalog", str(tmp_path), "--format", "json"
    )
    assert done.returncode == 0
    assert "signature skipped" in done.stderr and "mine.yml" in done.stderr


@pytest.mark.parametrize("engine", ["ahocorasick", "python"])
def test_fallback_engines_give_identical_json(engine: str) -> None:
    assert report(str(EXAMPLES), env={"TRIAGE_ENGINE": engine}) == report(
        str(EXAMPLES), env={"TRIAGE_ENGINE": "hyperscan"}
    )


def test_fallback_engines_agree_on_every_catalog_window() -> None:
    windows = sorted((ROOT / "patterns").rglob("*.log"))
    args = [str(w) for w in windows]
    reference = report(*args, env={"TRIAGE_ENGINE": "hyperscan"})
    for engine in ("ahocorasick", "python"):
        assert report(*args, env={"TRIAGE_ENGINE": engine}) == reference


def test_help_names_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "triage_bot", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("triage", "catalog", "serve", "worker", "rerun", "replay"):
        assert command in done.stdout
    catalog = subprocess.run(
        [sys.executable, "-m", "triage_bot", "catalog", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for command in ("lint", "test", "new"):
        assert command in catalog.stdout


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("args", [(), ("help",)], ids=["no-arguments", "help"])
def test_bare_command_and_help_print_the_top_level_help(args: tuple[str, ...]) -> None:
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == run_cli("--help").stdout
    assert done.stdout.startswith("usage: triage-bot ")
    for command in ("triage", "catalog", "serve", "worker", "rerun", "replay", "help"):
        assert f"\n    {command} " in done.stdout


def test_help_with_a_command_prints_that_commands_help() -> None:
    done = run_cli("help", "catalog")
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_cli("catalog", "--help").stdout
    assert done.stdout.startswith("usage: triage-bot catalog ")


def test_help_with_an_unknown_command_is_a_usage_error() -> None:
    done = run_cli("help", "bogus")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "invalid choice: 'bogus'" in done.stderr


def test_an_unknown_engine_is_one_line_not_a_traceback() -> None:
    done = triage(str(EXAMPLES), env={"TRIAGE_ENGINE": "aho-corasick"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "triage-bot: TRIAGE_ENGINE: unknown engine 'aho-corasick'; "
        "choose one of hyperscan, ahocorasick, python"
    ]
