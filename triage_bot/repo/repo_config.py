"""Per-repository settings: `.github/triage-bot.yml` on the default branch.

`repo_setup(client, repo)` is the entry point: the repository's config, the catalog to triage
it with (the built-in signatures, plus the repository's own, less the disabled ones; see
repo_catalog.py), and what was wrong on the way, one line each ("file:line: reason"), for the
comment's footer. Bad repository content never raises: a key that is wrong falls back to its
default, the valid ones still count, and a broken signature is left out. When GitHub refuses
to show the files (403: the installation lacks the Contents permission; 404), the repository
gets the defaults and a footer line saying what could not be read and why; GitHub's other
errors (5xx, timeouts, rate limits) propagate as they do everywhere else.

The files are fetched only when their blob SHAs change (repo_files.py), and the setup built
from them (its compiled catalog costs the most) is kept per repository and SHAs, bounded.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from triage_bot.core import safe_yaml
from triage_bot.core.cache import Lru
from triage_bot.core.catalog import line_in_text
from triage_bot.core.classify import CompiledCatalog
from triage_bot.core.limits import MAX_SCHEMA_ERRORS
from triage_bot.github_api.github import GitHubClient
from triage_bot.repo import repo_files
from triage_bot.repo.repo_catalog import builtin_catalog, compile_catalog, load_repo_signatures
from triage_bot.repo.repo_files import (
    RepoFile,
    Unreadable,
    github_folder,
    read_file,
    signature_files,
)

log = logging.getLogger(__name__)

CONFIG_PATH = ".github/triage-bot.yml"
DEFAULT_PATTERNS_DIR = ".github/triage-bot/patterns"
ReportTarget = Literal["comment", "check-run", "both"]
MAX_PROBLEMS = 20  # lines in the footer; the rest are counted
_SCHEMA = Path(__file__).with_name("repo_config.schema.json")
# Keys of the file -> fields of RepoConfig.
_FIELDS = {
    "enabled": "enabled",
    "workflows": "workflows",
    "report": "report",
    "disable": "disabled_signatures",
    "auto_retry": "auto_retry",
    "patterns": "patterns_dir",
}


@dataclass(frozen=True)
class RepoConfig:
    """What a repository asked for; the defaults are what a repository without the file gets."""

    enabled: bool = True
    workflows: tuple[str, ...] = ()  # workflow names (or file paths) to triage; empty: all
    report: ReportTarget = "comment"
    disabled_signatures: tuple[str, ...] = ()
    auto_retry: bool = False  # re-run `retry: true` failures once per run, automatically
    patterns_dir: str = DEFAULT_PATTERNS_DIR

    @property
    def wants_comment(self) -> bool:
        return self.report in ("comment", "both")

    @property
    def wants_check_run(self) -> bool:
        return self.report in ("check-run", "both")


@dataclass(frozen=True)
class RepoSetup:
    """A repository's config, the catalog to triage it with, and what was wrong on the way
    (each problem one line, "file:line: reason", shown in the comment's footer)."""

    config: RepoConfig
    catalog: CompiledCatalog
    problems: tuple[str, ...] = field(default=())


# ---- the file -------------------------------------------------------------------------------


@cache
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(_SCHEMA.read_text(encoding="utf-8")))


def parse_config(text: str, path: str = CONFIG_PATH) -> tuple[RepoConfig, list[str]]:
    """The config a file's text asks for, and its problems. A key with a problem keeps its
    default; an unreadable file gives every default."""
    try:
        data = safe_yaml.load(text)  # bounded: an alias bomb is refused here, not expanded
    except safe_yaml.YamlProblem as refused:
        where = f"{path}:{refused.line}" if refused.line is not None else path
        return RepoConfig(), [f"{where}: {refused.reason}; the defaults are used"]
    if data is None:
        return RepoConfig(), []  # an empty file: the defaults
    found: list[tuple[int, str]] = []  # (line, reason): told in the file's order
    dropped: set[str] = set()
    # Bounded: a 64 KiB list can hold 30,000 wrong items, each an error and a line to find.
    errors = list(islice(_validator().iter_errors(data), MAX_SCHEMA_ERRORS + 1))
    if len(errors) > MAX_SCHEMA_ERRORS:
        first = safe_yaml.schema_message(errors[0])
        return RepoConfig(), [
            f"{path}: more than {MAX_SCHEMA_ERRORS} problems (the first: {first}); "
            "the defaults are used"
        ]
    for error in errors:
        if error.validator == "additionalProperties" and isinstance(data, dict):
            found.extend(_unknown_keys(text, data))
            continue
        keys = list(error.absolute_path)
        message = safe_yaml.schema_message(error)
        if not keys:  # the whole file is wrong (not a mapping)
            return RepoConfig(), [f"{path}:1: {message}; the defaults are used"]
        dropped.add(str(keys[0]))
        where = ".".join(str(k) for k in keys)
        found.append((line_in_text(text, keys) or 1, f"{where}: {message}"))
    values: dict[str, Any] = {
        _FIELDS[key]: tuple(value) if isinstance(value, list) else value
        for key, value in data.items()
        if key in _FIELDS and key not in dropped
    }
    if "patterns_dir" in values:
        values["patterns_dir"] = str(values["patterns_dir"]).strip("/")
    return RepoConfig(**values), [f"{path}:{line}: {reason}" for line, reason in sorted(found)]


def _unknown_keys(text: str, data: dict[Any, Any]) -> list[tuple[int, str]]:
    known = ", ".join(_FIELDS)
    unknown = [key for key in data if key not in _FIELDS]
    found = [
        (
            line_in_text(text, [key]) or 1,
            f"unknown key {safe_yaml.excerpt(key)} (the keys are: {known})",
        )
        for key in unknown[:MAX_SCHEMA_ERRORS]
    ]
    if len(unknown) > MAX_SCHEMA_ERRORS:
        untold = line_in_text(text, [unknown[MAX_SCHEMA_ERRORS]]) or 1
        found.append((untold, f"and {len(unknown) - MAX_SCHEMA_ERRORS} more unknown keys"))
    return found


def skip_reason(config: RepoConfig, workflow_name: str, workflow_path: str) -> str | None:
    """Why a run of this workflow is not triaged, or None when it is."""
    if not config.enabled:
        return f"disabled by {CONFIG_PATH} (enabled: false)"
    if not config.workflows:
        return None
    path = workflow_path.split("@", 1)[0]  # a called workflow's path carries "@ref"
    if workflow_name in config.workflows or (path and path in config.workflows):
        return None
    return f"workflow {workflow_name or path!r} is not among the workflows of {CONFIG_PATH}"


# ---- the setup ------------------------------------------------------------------------------

# (repo, config SHA, signature files' paths and SHAs, listing problems) -> the setup.
_setups: Lru[tuple[Any, ...], RepoSetup] = Lru(32)


def repo_setup(client: GitHubClient, repo: str) -> RepoSetup:
    """The repository's config, catalog and problems (see the module's docstring)."""
    try:
        return _setup(client, repo)
    except Unreadable as refused:
        # Not cached: the next triage asks again, so granting the permission takes effect.
        log.warning("%s: %s; the defaults are used", repo, refused)
        problem = f"{refused.problem}; the defaults are used"
        return RepoSetup(RepoConfig(), builtin_catalog(), (problem,))


def _setup(client: GitHubClient, repo: str) -> RepoSetup:
    github = github_folder(client, repo, label=CONFIG_PATH)
    entry = next((e for e in github if e.path == CONFIG_PATH and e.type == "file"), None)
    config_file = read_file(client, repo, entry) if entry is not None else None
    config, problems = _config_of(config_file)
    if not config.enabled:
        return RepoSetup(config, builtin_catalog(), tuple(problems))
    files, listing_problems = signature_files(client, repo, config.patterns_dir, github)
    key = (
        repo,
        config_file.sha if config_file else None,
        tuple((f.path, f.sha) for f in files),
        tuple(listing_problems),
    )
    setup = _setups.get(key)
    if setup is None:
        setup = _build(repo, config, config_file, files, [*problems, *listing_problems])
        _setups.put(key, setup)
    return setup


def _config_of(file: RepoFile | None) -> tuple[RepoConfig, list[str]]:
    if file is None:
        return RepoConfig(), []
    if file.text is None:
        return RepoConfig(), [f"{file.path}: {file.problem}; the defaults are used"]
    return parse_config(file.text, file.path)


def _build(
    repo: str,
    config: RepoConfig,
    config_file: RepoFile | None,
    files: list[RepoFile],
    problems: list[str],
) -> RepoSetup:
    own = load_repo_signatures(repo, files)
    problems.extend(own.problems)
    known = {s.id for s in builtin_catalog().catalog.signatures} | {s.id for s in own.signatures}
    # Only a file can disable anything, so `config_file` holds the ids' lines.
    text, path = (config_file.text or "", config_file.path) if config_file else ("", CONFIG_PATH)
    for index, sid in enumerate(config.disabled_signatures):
        if sid not in known:
            line = line_in_text(text, ["disable", index]) or 1
            problems.append(f"{path}:{line}: disable: no signature has the id {sid!r}")
    config = replace(
        config, disabled_signatures=tuple(s for s in config.disabled_signatures if s in known)
    )
    catalog, compile_problems = compile_catalog(repo, own.signatures, config.disabled_signatures)
    problems.extend(compile_problems)
    return RepoSetup(config, catalog, _capped(problems))


def _capped(problems: list[str]) -> tuple[str, ...]:
    if len(problems) <= MAX_PROBLEMS:
        return tuple(problems)
    more = len(problems) - MAX_PROBLEMS + 1
    return (*problems[: MAX_PROBLEMS - 1], f"... and {more} more problems")


def clear_caches() -> None:
    """Forget every repository's setup and file (tests; a process that starts afresh)."""
    _setups.clear()
    repo_files.clear_cache()
