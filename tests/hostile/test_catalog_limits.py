"""The bounds on signature files (size, examples, nesting, the `.log` window), on a
repository's signatures (how many), and symbolic links leading out of a catalog folder,
which `catalog lint` and `triage --catalog` refuse alike."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub
from repo_world import FROB_LOG, WIDGETS, World, make_world

from hostile.hostile_yaml import run_cli, signature_text
from triage_bot.catalog_tools import catalog_check
from triage_bot.core.limits import (
    MAX_EXAMPLES,
    MAX_SCHEMA_ERRORS,
    MAX_SIGNATURE_FILES,
    MAX_WINDOW_BYTES,
)
from triage_bot.repo.repo_catalog import load_repo_signatures
from triage_bot.repo.repo_config import CONFIG_PATH, RepoConfig, parse_config
from triage_bot.repo.repo_files import RepoFile

LINE = "FROB-SYNC: frobnicator alpha is out of sync"
FOLDER = ".github/triage-bot/patterns"


def _write(folder: Path, ident: str, text: str, window: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{ident}.yml"
    path.write_text(text, encoding="utf-8")
    if window:
        path.with_suffix(".log").write_text(f"#! match: {ident} name=alpha\n{LINE}\n")
    return path


def _lint(folder: Path) -> list[str]:
    _signatures, problems = catalog_check.lint([folder])
    return [str(p) for p in problems]


def test_a_good_signature_lints_clean(tmp_path: Path) -> None:
    """The control of the tests below: what they break is all that is wrong."""
    _write(tmp_path / "p", "frob", signature_text("frob", [LINE] * MAX_EXAMPLES))
    assert _lint(tmp_path / "p") == []
    checks, failures, problems = catalog_check.test([tmp_path / "p"])
    assert failures == [] and problems == [] and checks == MAX_EXAMPLES + 1 + 1


@pytest.mark.parametrize("kind", ["match", "no_match"])
def test_more_examples_than_the_bound_refuse_the_signature(tmp_path: Path, kind: str) -> None:
    many = MAX_EXAMPLES + 1
    if kind == "match":
        text = signature_text("frob", [LINE] * many)
    else:
        text = signature_text("frob", [LINE], [f"in sync {n}" for n in range(many)])
    path = _write(tmp_path / "p", "frob", text)
    [problem] = _lint(tmp_path / "p")
    assert problem.startswith(f"{path}:")
    assert f"tests.{kind} has {many} examples; at most {MAX_EXAMPLES}" in problem
    # A repository's copy: the same refusal, a problem line, no signature.
    loaded = load_repo_signatures(WIDGETS, [RepoFile(f"{FOLDER}/frob.yml", "1", text)])
    assert loaded.signatures == ()
    [line] = loaded.problems
    assert f"tests.{kind} has {many} examples" in line


def test_an_oversize_signature_file_is_skipped(tmp_path: Path) -> None:
    text = signature_text("frob", [LINE]) + "# " + "padding " * 9000 + "\n"  # ~72 KB
    path = _write(tmp_path / "p", "frob", text)
    [problem] = _lint(tmp_path / "p")
    assert problem == f"{path}: larger than 65,536 bytes; skipped"
    loaded = load_repo_signatures(WIDGETS, [RepoFile(f"{FOLDER}/frob.yml", "1", text)])
    assert loaded.signatures == () and "larger than 65,536 bytes" in loaded.problems[0]


def test_a_deeply_nested_signature_is_refused(tmp_path: Path) -> None:
    text = signature_text("frob", [LINE]).replace(
        "fix: Run `make frob-sync`.", "fix: " + "[" * 100 + "]" * 100
    )
    path = _write(tmp_path / "p", "frob", text)
    [problem] = _lint(tmp_path / "p")
    assert problem.startswith(f"{path}:8: YAML nested deeper than 20 levels")


def test_an_oversize_log_window_is_a_lint_problem_and_a_test_failure(tmp_path: Path) -> None:
    path = _write(tmp_path / "p", "frob", signature_text("frob", [LINE]))
    window = path.with_suffix(".log")
    filler = "ok\n" * (MAX_WINDOW_BYTES // 3 + 1)
    window.write_text(f"#! match: frob name=alpha\n{LINE}\n{filler}")
    [problem] = _lint(tmp_path / "p")
    assert problem.startswith(f"{window}: larger than {MAX_WINDOW_BYTES:,} bytes")
    _checks, failures, _problems = catalog_check.test([tmp_path / "p"])
    assert [str(f) for f in failures] == [
        f"{window}: expected at most {MAX_WINDOW_BYTES:,} bytes; got more"
    ]


# ---- a repository's signatures, through the fake GitHub ------------------------------------


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = make_world(fake_github, f"sqlite:///{tmp_path / 'triage.db'}", tmp_path)
    yield built
    built.store.close()


def test_signature_files_past_the_bound_are_not_fetched_and_the_footer_says_so(
    world: World,
) -> None:
    count = MAX_SIGNATURE_FILES + 3
    for number in range(count):
        ident = f"frob-{number:03d}"
        world.add_file(WIDGETS, f"{FOLDER}/{ident}.yml", f"id: {ident}\n")  # broken: cheap
    world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    [body] = world.comments(WIDGETS)
    footer = body.split("Problems with this repository's triage-bot files", 1)[1]
    assert f"{count} signature files; only the first {MAX_SIGNATURE_FILES} (by path)" in footer
    fetched = world.fake.requests(rf"/contents/{FOLDER}/frob-\d+\.yml$")
    assert len(fetched) == MAX_SIGNATURE_FILES
    assert not world.fake.requests(rf"/contents/{FOLDER}/frob-{count - 1:03d}\.yml$")


def test_an_oversize_repository_signature_is_not_fetched(world: World) -> None:
    text = signature_text("frob", [LINE]) + "# " + "padding " * 9000 + "\n"
    world.add_file(WIDGETS, f"{FOLDER}/frob.yml", text)
    world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    [body] = world.comments(WIDGETS)
    assert f"{FOLDER}/frob.yml`: larger than 65,536 bytes; skipped" in body
    assert not world.fake.requests(rf"/contents/{FOLDER}/frob\.yml$")


# ---- symbolic links out of a catalog folder ------------------------------------------------


def test_lint_and_triage_refuse_alike_a_link_leading_out_of_the_folder(tmp_path: Path) -> None:
    outside = _write(tmp_path / "elsewhere", "frob", signature_text("frob", [LINE]))
    folder = tmp_path / "patterns"
    folder.mkdir()
    link = folder / "frob.yml"
    link.symlink_to(outside)
    job = tmp_path / "job.log"
    job.write_bytes(FROB_LOG)
    refusal = f"{link}: a symbolic link to {outside.resolve()}, outside {folder}; skipped"

    lint = run_cli(tmp_path, "catalog", "lint", str(folder))
    assert lint.returncode == 1
    assert refusal in lint.stdout and "catalog lint: 0 signatures, 1 problems" in lint.stdout
    test = run_cli(tmp_path, "catalog", "test", str(folder))
    assert test.returncode == 1 and refusal in test.stdout
    triage = run_cli(tmp_path, "triage", "--format", "json", "--catalog", str(folder), str(job))
    assert triage.returncode == 0, triage.stderr
    assert f"triage-bot: signature skipped: {refusal}" in triage.stderr
    assert '"frob"' not in triage.stdout  # the linked signature did not run

    # The control: the same file copied in is linted and runs.
    link.unlink()
    link.write_text(outside.read_text())
    assert run_cli(tmp_path, "catalog", "lint", str(folder)).stdout.endswith(
        "catalog lint: 1 signatures, 1 problems\n"  # no frob.log beside the copy
    )
    triage = run_cli(tmp_path, "triage", "--format", "json", "--catalog", str(folder), str(job))
    assert "signature skipped" not in triage.stderr and '"frob"' in triage.stdout


def test_links_inside_the_folder_and_a_linked_folder_are_used(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _write(real / "sub", "frob", signature_text("frob", [LINE]))
    (real / "sub" / "alias").mkdir()
    # A link to a file of the same folder: loaded (its id then repeats, as a copy's would).
    (real / "sub" / "alias" / "frob.yml").symlink_to(real / "sub" / "frob.yml")
    linked = tmp_path / "linked"
    linked.symlink_to(real)
    for folder in (real, linked):
        signatures, problems = catalog_check.lint([folder])
        assert [s.id for s in signatures] == ["frob"]
        said = "\n".join(str(p) for p in problems)
        assert "duplicate id 'frob'" in said and "symbolic link" not in said


# ---- many errors in one file -----------------------------------------------------------------


def test_a_config_with_thousands_of_errors_gives_the_defaults_in_one_line() -> None:
    text = "report: both\ndisable: [" + ", ".join(["1"] * 20_000) + "]\n"
    started = time.process_time()
    config, problems = parse_config(text)
    assert time.process_time() - started < 1.0
    assert config == RepoConfig()  # even `report`: a file this broken is not trusted
    [problem] = problems
    assert problem.startswith(f"{CONFIG_PATH}: more than {MAX_SCHEMA_ERRORS} problems (the first:")
    assert "is too long (at most 500 items)" in problem and len(problem) < 300


def test_thousands_of_unknown_keys_are_told_up_to_the_bound() -> None:
    text = "report: both\n" + "".join(f"k{n}: 1\n" for n in range(6000))
    started = time.process_time()
    config, problems = parse_config(text)
    assert time.process_time() - started < 1.0
    assert config.report == "both"
    assert len(problems) == MAX_SCHEMA_ERRORS + 1
    assert problems[0].startswith(f"{CONFIG_PATH}:2: unknown key 'k0'")
    untold = MAX_SCHEMA_ERRORS + 2  # the line of the first key not told
    assert (
        problems[-1] == f"{CONFIG_PATH}:{untold}: and {6000 - MAX_SCHEMA_ERRORS} more unknown keys"
    )


def test_a_signature_with_thousands_of_errors_lists_the_first_ones(tmp_path: Path) -> None:
    wrong = "[" + ", ".join(["[1]"] * 10_000) + "]"
    text = signature_text("frob", [LINE]).replace('keywords: ["FROB-SYNC"]', f"keywords: {wrong}")
    path = _write(tmp_path / "p", "frob", text)
    started = time.process_time()
    problems = _lint(tmp_path / "p")
    assert time.process_time() - started < 1.0
    assert len(problems) == MAX_SCHEMA_ERRORS + 1
    assert problems[0].startswith(f"{path}:5: keywords: [[1], [1], [1], [1], ...] is too long")
    assert any(p.startswith(f"{path}:5: keywords.0: [1] is not of type 'string'") for p in problems)
    assert problems[-1] == f"{path}: more than {MAX_SCHEMA_ERRORS} schema errors"
