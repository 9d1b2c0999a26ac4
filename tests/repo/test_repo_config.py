"""Per-repository config and signatures, against the fake GitHub over real HTTP:
`.github/triage-bot.yml` (on/off, workflows, disabled signatures), a repository's own
signatures (for that repository only), problems in the comment's footer, and the blob-SHA
caches that keep GitHub from being asked for the same file twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub
from helpers import ROOT
from repo_world import (
    FROB_LOG,
    GADGETS,
    MODULE_NOT_FOUND,
    OWN_SIGNATURE,
    OWN_SIGNATURE_TEXT,
    UNEXPECTED_KEYWORD,
    WIDGETS,
    World,
    example_log,
    make_world,
)

from triage_bot.repo.repo_catalog import builtin_catalog, load_repo_signatures
from triage_bot.repo.repo_config import CONFIG_PATH, RepoConfig, parse_config, skip_reason
from triage_bot.repo.repo_files import RepoFile

TWO_FAILURES = (MODULE_NOT_FOUND, UNEXPECTED_KEYWORD)


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = make_world(fake_github, f"sqlite:///{tmp_path / 'triage.db'}", tmp_path)
    yield built
    built.store.close()


def _logs(*names: str) -> dict[str, bytes]:
    return {name: example_log(name) for name in names}


def test_a_disabled_signature_is_not_in_the_comment(world: World) -> None:
    world.add_file(WIDGETS, CONFIG_PATH, "disable:\n  - python-module-not-found\n")
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, _logs(*TWO_FAILURES)))
    [body] = world.comments(WIDGETS)
    assert "`python-module-not-found`" not in body
    assert "`python-unexpected-keyword-argument`" in body
    assert "python-module-not-found" not in {g["signature"] for g in result["groups"]}
    # The same failures in a repository without the file: the signature is there.
    world.triage(GADGETS, world.failed_run(GADGETS, _logs(*TWO_FAILURES)))
    [other] = world.comments(GADGETS)
    assert "`python-module-not-found`" in other


def test_a_repositorys_own_signature_serves_that_repository_only(world: World) -> None:
    world.add_file(WIDGETS, OWN_SIGNATURE, OWN_SIGNATURE_TEXT)
    world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    world.triage(GADGETS, world.failed_run(GADGETS, {"check": FROB_LOG}))
    [mine] = world.comments(WIDGETS)
    [theirs] = world.comments(GADGETS)
    assert "Frobnicator out of sync" in mine and "`widgets-frob-out-of-sync`" in mine
    assert "make frob-sync" in mine  # its fix
    assert "Frobnicator out of sync" not in theirs and "widgets-frob-out-of-sync" not in theirs
    assert "<summary>Unexplained: check" in theirs


def test_a_repository_signature_with_a_builtin_id_replaces_it_there(world: World) -> None:
    own = OWN_SIGNATURE_TEXT.replace("widgets-frob-out-of-sync", "python-module-not-found")
    own = own.replace("Frobnicator out of sync", "Our module is missing")
    world.add_file(WIDGETS, ".github/triage-bot/patterns/python-module-not-found.yml", own)
    logs = {"check": FROB_LOG, **_logs(MODULE_NOT_FOUND)}
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, logs))
    [body] = world.comments(WIDGETS)
    assert "Our module is missing" in body and "Python module not found" not in body
    # Only the repository's version is left: the ModuleNotFoundError job has another cause.
    causes = {job["name"]: job["root_cause"] for job in result["jobs"]}
    assert causes["check"]["title"] == "Our module is missing"
    assert causes[MODULE_NOT_FOUND] is None or causes[MODULE_NOT_FOUND]["title"] != (
        "Our module is missing"
    )


def test_broken_signatures_and_a_bad_config_are_in_the_footer_and_the_rest_runs(
    world: World,
) -> None:
    world.add_file(
        WIDGETS,
        CONFIG_PATH,
        """\
        enabled: true
        report: comments
        reprot: both
        disable: [no-such-signature, python-unexpected-keyword-argument]
        """,
    )
    world.add_file(WIDGETS, OWN_SIGNATURE, OWN_SIGNATURE_TEXT)
    broken = OWN_SIGNATURE_TEXT.replace("widgets-frob-out-of-sync", "widgets-broken")
    broken = broken.replace('pattern: "FROB-SYNC', 'pattern: "((FROB-SYNC')
    world.add_file(WIDGETS, ".github/triage-bot/patterns/more/widgets-broken.yml", broken)
    world.add_file(WIDGETS, ".github/triage-bot/patterns/not-yaml.yml", "id: [unclosed\n")
    logs = {"check": FROB_LOG, **_logs(*TWO_FAILURES)}
    world.triage(WIDGETS, world.failed_run(WIDGETS, logs))
    [body] = world.comments(WIDGETS)
    footer = body.split("Problems with this repository's triage-bot files", 1)[1]
    assert "`.github/triage-bot.yml:2`: report: 'comments' is not one of" in footer
    assert "`.github/triage-bot.yml:3`: unknown key 'reprot'" in footer
    assert "`.github/triage-bot.yml:4`: disable: no signature has the id 'no-such-signature'" in (
        footer
    )
    assert "`.github/triage-bot/patterns/more/widgets-broken.yml:6`: pattern does not compile" in (
        footer
    )
    assert "`.github/triage-bot/patterns/not-yaml.yml:2`: invalid YAML" in footer
    # The built-in catalog ran, the good signature of the repository too, and the valid
    # keys of the config counted (the disabled signature is gone).
    assert "`python-module-not-found`" in body and "`widgets-frob-out-of-sync`" in body
    assert "`python-unexpected-keyword-argument`" not in body


@pytest.mark.parametrize(
    ("config", "triaged"),
    [
        ("enabled: false\n", False),
        ("workflows: [Lint]\n", False),
        ("workflows: [CI]\n", True),
        ("workflows: [.github/workflows/ci.yml]\n", True),
    ],
)
def test_enabled_and_workflows_decide_whether_a_run_is_triaged(
    world: World, config: str, triaged: bool
) -> None:
    world.add_file(WIDGETS, CONFIG_PATH, config)
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, _logs(MODULE_NOT_FOUND)))
    assert bool(world.comments(WIDGETS)) is triaged
    if not triaged:
        assert result["comments"] == [] and "jobs" not in result
        assert CONFIG_PATH in result["skipped"]
        assert not world.fake.requests(r"/actions/jobs/\d+/logs$")


def test_files_are_fetched_again_only_when_their_blob_sha_changes(world: World) -> None:
    world.add_file(WIDGETS, CONFIG_PATH, "report: comment\n")
    world.add_file(WIDGETS, OWN_SIGNATURE, OWN_SIGNATURE_TEXT)

    def fetches() -> tuple[int, int]:
        config = world.fake.requests(r"/contents/\.github/triage-bot\.yml$")
        signature = world.fake.requests(r"/contents/\.github/triage-bot/patterns/.+\.yml$")
        return len(config), len(signature)

    for _ in range(3):
        world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    assert fetches() == (1, 1)
    world.add_file(WIDGETS, CONFIG_PATH, "report: comment\ndisable: [widgets-frob-out-of-sync]\n")
    world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    assert fetches() == (2, 1)
    assert "widgets-frob-out-of-sync" not in world.comments(WIDGETS)[0]
    world.remove_file(WIDGETS, CONFIG_PATH)
    world.triage(WIDGETS, world.failed_run(WIDGETS, {"check": FROB_LOG}))
    assert fetches() == (2, 1) and "`widgets-frob-out-of-sync`" in world.comments(WIDGETS)[0]


def test_a_repository_without_any_file_costs_one_request(world: World) -> None:
    world.triage(GADGETS, world.failed_run(GADGETS, _logs(MODULE_NOT_FOUND)))
    assert len(world.fake.requests(r"/contents/")) == 1
    world.add_file(GADGETS, ".github/workflows/ci.yml", "on: push\n")
    world.triage(GADGETS, world.failed_run(GADGETS, _logs(MODULE_NOT_FOUND)))
    assert len(world.fake.requests(r"/contents/")) == 2  # .github/ holds no triage-bot/


# ---- the file, alone ------------------------------------------------------------------------


def test_a_valid_file_gives_its_values() -> None:
    text = """\
enabled: true
workflows: [CI, .github/workflows/nightly.yml]
report: both
disable: [python-module-not-found]
auto_retry: true
patterns: ci/signatures/
"""
    config, problems = parse_config(text)
    assert problems == []
    assert config == RepoConfig(
        enabled=True,
        workflows=("CI", ".github/workflows/nightly.yml"),
        report="both",
        disabled_signatures=("python-module-not-found",),
        auto_retry=True,
        patterns_dir="ci/signatures",
    )
    assert config.wants_comment and config.wants_check_run


@pytest.mark.parametrize(
    ("text", "expected", "problem"),
    [
        ("", RepoConfig(), None),
        ("enabled: [\n", RepoConfig(), ".github/triage-bot.yml:2: invalid YAML"),
        ("- a list\n", RepoConfig(), ".github/triage-bot.yml:1: ['a list'] is not of type"),
        (
            "report: check-run\nauto_retry: yes please\n",
            RepoConfig(report="check-run"),
            ".github/triage-bot.yml:2: auto_retry: 'yes please' is not of type 'boolean'",
        ),
        (
            "enabled: false\nworkflows: [CI, 3]\n",
            RepoConfig(enabled=False),
            ".github/triage-bot.yml:2: workflows.1: 3 is not of type 'string'",
        ),
        (
            "disable:\n  - Not An Id\n",
            RepoConfig(),
            ".github/triage-bot.yml:2: disable.0: 'Not An Id' does not match",
        ),
        (
            "patterns: ../elsewhere\n",
            RepoConfig(),
            ".github/triage-bot.yml:1: patterns: '../elsewhere' does not match",
        ),
        (
            "report: comment\nenabeld: false\n",
            RepoConfig(),
            ".github/triage-bot.yml:2: unknown key 'enabeld' (the keys are: enabled, workflows,",
        ),
    ],
)
def test_each_problem_of_the_file_is_one_line_and_its_key_keeps_the_default(
    text: str, expected: RepoConfig, problem: str | None
) -> None:
    config, problems = parse_config(text)
    assert config == expected
    if problem is None:
        assert problems == []
    else:
        [line] = problems
        assert line.startswith(problem)


def test_skip_reason_names_the_workflow_or_the_switch() -> None:
    assert skip_reason(RepoConfig(), "CI", ".github/workflows/ci.yml") is None
    off = skip_reason(RepoConfig(enabled=False), "CI", "")
    assert off is not None and "enabled: false" in off
    only = RepoConfig(workflows=(".github/workflows/ci.yml",))
    assert skip_reason(only, "CI", ".github/workflows/ci.yml@refs/heads/main") is None
    other = skip_reason(only, "Nightly", ".github/workflows/nightly.yml")
    assert other is not None and "'Nightly'" in other


def test_repository_signatures_are_checked_as_catalog_lint_and_test_check_builtin_ones() -> None:
    folder = ".github/triage-bot/patterns"
    lost_keyword = OWN_SIGNATURE_TEXT.replace('keywords: ["FROB-SYNC"]', 'keywords: ["FROB-SINK"]')
    wrong_capture = OWN_SIGNATURE_TEXT.replace("captures: {name: alpha}", "captures: {name: beta}")
    files = [
        RepoFile(f"{folder}/a/widgets-frob-out-of-sync.yml", "1", OWN_SIGNATURE_TEXT),
        RepoFile(f"{folder}/b/widgets-frob-out-of-sync.yml", "2", OWN_SIGNATURE_TEXT),
        RepoFile(f"{folder}/c/widgets-frob-out-of-sync.yml", "3", lost_keyword),
        RepoFile(f"{folder}/d/widgets-frob-out-of-sync.yml", "4", wrong_capture),
        RepoFile(f"{folder}/huge.yml", "5", None, "larger than 65,536 bytes"),
    ]
    loaded = load_repo_signatures(WIDGETS, files)
    assert [s.id for s in loaded.signatures] == ["widgets-frob-out-of-sync"]
    assert loaded.signatures[0].origin == WIDGETS
    first, second, third, fourth = loaded.problems
    assert first.startswith(f"{folder}/b/widgets-frob-out-of-sync.yml:1: duplicate id")
    assert third.startswith(f"{folder}/d/widgets-frob-out-of-sync.yml:13: expected")
    assert second.startswith(f"{folder}/c/widgets-frob-out-of-sync.yml:13: keyword 'FROB-SINK'")
    assert fourth == f"{folder}/huge.yml: larger than 65,536 bytes; skipped"


def test_the_readme_example_is_a_valid_config() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = readme.split("# .github/triage-bot.yml\n", 1)[1].split("```", 1)[0]
    config, problems = parse_config(example)
    assert problems == [] and config.report == "both" and config.workflows
    known = {s.id for s in builtin_catalog().catalog.signatures}
    assert set(config.disabled_signatures) <= known


@pytest.mark.parametrize(
    ("summary", "refused"),
    [
        ('"{{ name * 100000000 }}"', "summary uses mul"),
        ("\"{{ name|replace('a', 'bb') }}\"", "summary uses the filter 'replace'"),
        ('"{% for c in name %}{{ c }}{% endfor %}"', "summary uses for"),
        ('"{{ name.split() }}"', "summary uses call"),
        ('"{% if name > 3 %}big{% endif %}"', "summary uses the comparison 'gt'"),
        ('"{{ name + 1 }}"', "summary uses add"),
    ],
)
def test_a_repository_signatures_templates_may_not_compute(summary: str, refused: str) -> None:
    text = OWN_SIGNATURE_TEXT.replace('"frobnicator {{ name | code }} is out of sync"', summary)
    loaded = load_repo_signatures(WIDGETS, [RepoFile(OWN_SIGNATURE, "1", text)])
    assert loaded.signatures == ()
    [problem] = loaded.problems
    assert problem.startswith(f"{OWN_SIGNATURE}:8: {refused}, which a repository's signature")
