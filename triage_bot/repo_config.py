"""Per-repository settings: `.github/triage-bot.yml` on the default branch.

Interface first (other modules code against `RepoConfig` and `RepoSetup`); the loader, its
JSON Schema and the repository's own signatures are filled in by the config work of issue #4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from triage_bot.classify import CompiledCatalog

CONFIG_PATH = ".github/triage-bot.yml"
DEFAULT_PATTERNS_DIR = ".github/triage-bot/patterns"
ReportTarget = Literal["comment", "check-run", "both"]


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
