"""A YAML alias bomb ("billion laughs") and its cousins, wherever the bot reads YAML: a
repository's config, a repository's signature, a catalog folder given to the command line.
Each is refused with a line that says why, in bounded time and memory, before any schema
check walks the data (which is what used to take 2.8 GiB)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fakegithub import FakeGitHub
from test_e2e import Stack

from hostile.hostile_yaml import bomb, measure, run_cli, signature_text
from triage_bot.core import safe_yaml
from triage_bot.core.limits import MAX_MESSAGE_CHARS, MAX_YAML_DEPTH, MAX_YAML_NODES
from triage_bot.repo.repo_catalog import load_repo_signatures
from triage_bot.repo.repo_config import CONFIG_PATH, RepoConfig, parse_config
from triage_bot.repo.repo_files import RepoFile

CPU_BOUND_S = 1.0
MEMORY_BOUND_MB = 50.0
SIGNATURE = ".github/triage-bot/patterns/frob.yml"


def test_the_bomb_is_the_size_reported() -> None:
    assert 450 <= len(bomb().encode()) <= 700


def test_a_bomb_as_the_repository_config_gives_the_defaults_within_bounds() -> None:
    measured = measure(
        f"""
        from triage_bot.repo.repo_config import CONFIG_PATH, RepoConfig, parse_config
        parse_config("enabled: true\\n")  # imports and the schema, not measured
        def measured():
            config, problems = parse_config({bomb("workflows")!r})
            return [config.workflows, problems]
        """
    )
    workflows, problems = measured.result
    assert workflows == []  # the default: every workflow
    [problem] = problems
    assert problem.startswith(".github/triage-bot.yml:")
    assert f"YAML aliases expand beyond {MAX_YAML_NODES:,} nodes (an alias bomb?)" in problem
    assert problem.endswith("the defaults are used")
    assert measured.cpu_s < CPU_BOUND_S
    assert measured.rss_growth_mb < MEMORY_BOUND_MB


def test_a_bomb_as_a_repository_signature_is_a_problem_line_within_bounds() -> None:
    measured = measure(
        f"""
        from triage_bot.repo.repo_catalog import builtin_catalog, load_repo_signatures
        from triage_bot.repo.repo_files import RepoFile
        builtin_catalog()
        def measured():
            text = "id: frob\\n" + {bomb("keywords")!r}
            loaded = load_repo_signatures("o/r", [RepoFile({SIGNATURE!r}, "1", text)])
            return [len(loaded.signatures), list(loaded.problems)]
        """
    )
    count, problems = measured.result
    assert count == 0
    [problem] = problems
    assert problem.startswith(f"{SIGNATURE}:")
    assert "YAML aliases expand beyond" in problem and "alias bomb" in problem
    assert measured.cpu_s < CPU_BOUND_S
    assert measured.rss_growth_mb < MEMORY_BOUND_MB


def test_catalog_lint_of_a_folder_holding_a_bomb_is_bounded(tmp_path: Path) -> None:
    folder = tmp_path / "patterns"
    folder.mkdir()
    (folder / "frob.yml").write_text("id: frob\n" + bomb("keywords"), encoding="utf-8")
    (folder / "good.yml").write_text(
        signature_text("good", ["FROB-SYNC: frobnicator a is out of sync"])
    )
    env = {"TRIAGE_CACHE_DIR": str(tmp_path / "cache")}
    measured = measure(
        f"""
        import contextlib, io
        from triage_bot.cli.cli import main
        from triage_bot.catalog_tools.catalog_check import catalog_for
        catalog_for([])  # the built-in catalog, parsed once and cached: not measured
        def measured():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["catalog", "lint", {str(folder)!r}])
            return [code, out.getvalue()]
        """,
        env,
    )
    code, out = measured.result
    assert code == 1
    assert f"{folder / 'frob.yml'}:" in out and "(an alias bomb?)" in out
    assert "catalog lint: 1 signatures, 2 problems" in out  # the bomb, and good.log missing
    assert measured.cpu_s < CPU_BOUND_S
    assert measured.rss_growth_mb < MEMORY_BOUND_MB


def test_the_command_line_refuses_the_bomb_in_a_catalog_folder(tmp_path: Path) -> None:
    """`catalog lint`, `catalog test` and `triage --catalog`, as processes: each names it."""
    folder = tmp_path / "patterns"
    folder.mkdir()
    (folder / "frob.yml").write_text("id: frob\n" + bomb("keywords"), encoding="utf-8")
    log = tmp_path / "job.log"
    log.write_text("all good\n")
    for args in (
        ["catalog", "lint", str(folder)],
        ["catalog", "test", str(folder)],
        ["triage", "--catalog", str(folder), str(log)],
    ):
        done = run_cli(tmp_path, *args, timeout=60)
        said = done.stdout + done.stderr
        assert "frob.yml:" in said and "(an alias bomb?)" in said, (args, said)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("workflows: " + "[" * 200 + "]" * 200 + "\n", f"nested deeper than {MAX_YAML_DEPTH}"),
        ("workflows: " + "{a: " * 200 + "}" * 200 + "\n", f"nested deeper than {MAX_YAML_DEPTH}"),
        ("workflows: " + "[" * 50_000 + "\n", "invalid YAML"),  # libyaml's own bound first
        ("workflows:\n" + "".join("  " * d + "- \n" for d in range(1, 60)), "nested deeper"),
        (
            # One big string, repeated by aliases: few nodes, many characters.
            f"big: &s {'x' * 30000}\nworkflows: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s]\n",
            "YAML aliases expand beyond 262,144 characters (an alias bomb?)",
        ),
        ("a: " + "x" * 70_000 + "\n", "larger than 65,536 bytes"),
        ("a: " + "\u00e9" * 40_000 + "\n", "larger than 65,536 bytes"),  # 80,000 bytes
    ],
)
def test_deep_nesting_expanding_strings_and_oversize_text_are_refused(
    text: str, refusal: str
) -> None:
    config, problems = parse_config(text)
    assert config.workflows == ()
    [problem] = problems
    assert refusal in problem and problem.endswith("; the defaults are used")


def test_ordinary_anchors_and_a_large_alias_free_document_are_not_bombs() -> None:
    config, problems = parse_config("x-ci: &ci [CI, Nightly]\nworkflows: *ci\n")
    assert config.workflows == ("CI", "Nightly")
    assert [p for p in problems if "x-ci" not in p] == []  # only the unknown key
    # 15,000 nodes without an alias: past the expansion budget, but bounded by its size.
    many = "x-many: [" + ", ".join(["w"] * 15_000) + "]\n"
    assert len(many) < 65_536
    assert len(safe_yaml.load(many)["x-many"]) == 15_000
    config, problems = parse_config(many)
    assert config == RepoConfig()
    [problem] = problems
    assert "unknown key 'x-many'" in problem


def test_the_budget_counts_an_alias_as_all_it_names() -> None:
    # 101 copies of a 100-node list: 10,100 nodes, one past... well past the budget's 10,000.
    hundred = "[" + ", ".join(["x"] * 99) + "]"
    under = f"a: &a {hundred}\nb: [" + ", ".join(["*a"] * 98) + "]\n"
    over = f"a: &a {hundred}\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    assert len(safe_yaml.load(under)["b"]) == 98
    with pytest.raises(safe_yaml.YamlProblem, match="alias bomb"):
        safe_yaml.load(over)


def test_schema_messages_quote_an_excerpt_of_a_huge_value() -> None:
    huge = ["x" * 2000] * 12
    text = f"workflows: {json.dumps('y' * 30_000)}\nenabled: {json.dumps(huge)}\n"
    config, problems = parse_config(text)
    assert config.workflows == () and config.enabled is True
    assert len(problems) == 2
    for problem in problems:
        reason = problem.split(": ", 1)[1]
        assert len(reason) <= MAX_MESSAGE_CHARS + 40, reason
    assert "workflows: 'yyyy" in problems[0] and "is not of type 'array'" in problems[0]
    assert "enabled: ['xxxx" in problems[1] and "is not of type 'boolean'" in problems[1]
    text = signature_text("frob", ["FROB-SYNC: frobnicator a is out of sync"])
    text = text.replace("title: Frobnicator out of sync", f"title: {json.dumps(huge)}")
    loaded = load_repo_signatures("o/r", [RepoFile(SIGNATURE, "1", text)])
    [problem] = loaded.problems
    assert "title:" in problem and "is not of type 'string'" in problem
    assert len(problem) < len(SIGNATURE) + MAX_MESSAGE_CHARS + 120


# ---- end to end: `triage-bot serve` against the fake GitHub ---------------------------------

ANSWER_BOUND_S = 2.0  # wall clock, on a shared machine: the stall reported was over 10 s


def test_serve_triages_a_repository_whose_config_is_a_bomb_and_keeps_answering(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    stack = Stack(fake_github, tmp_path, "embedded")
    try:
        fake_github.state.add_file(stack.repo, CONFIG_PATH, bomb("workflows"))
        stack.up()
        pull, run = stack.pull_with_failed_run("bomb")
        payload, delivery = stack.webhook(run, pull), str(uuid.uuid4())
        answers = [_timed(lambda: stack.send(payload, delivery))]
        accepted = answers[0][1]
        assert accepted.status_code == 202, accepted.text
        # While the worker in the same process triages, the server answers promptly.
        deadline = time.monotonic() + 60
        while not (stack.triaged(run) and stack.comments(pull)):
            answers.append(_timed(lambda: httpx.get(f"{stack.url}/healthz", timeout=10)))
            assert time.monotonic() < deadline, stack.output()
            time.sleep(0.05)
        answers.append(_timed(lambda: stack.send(payload, delivery)))  # a redelivery
        assert answers[-1][1].json()["outcome"] == "duplicate"
        assert max(seconds for seconds, _ in answers) < ANSWER_BOUND_S
        [body] = stack.comments(pull)
        assert "block_regions" in body  # triaged with the defaults: the built-in catalog
        footer = body.split("Problems with this repository's triage-bot files", 1)[1]
        assert "(an alias bomb?)" in footer and "the defaults are used" in footer
        record = stack.store.jobs.get(accepted.json()["job"])
        assert record is not None and record.status == "done" and record.attempts == 1
    finally:
        stack.close()


def _timed(ask: Callable[[], httpx.Response]) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = ask()
    return time.monotonic() - started, response
