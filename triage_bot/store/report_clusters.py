"""The unexplained jobs of the coverage report, clustered by log template (drain3 mines the
templates), each cluster with the `triage-bot catalog new` command that drafts its signature.

The lines are the jobs' normalised best lines as recorded (job_outcomes: `line:` keys), so
the noise `compare.normalise` blanks (times, hex, temp paths, ...) is already out of them.
The command feeds the cluster's example line to `catalog new` on standard input, so it works
as printed, with no log at hand; the job's URL says where the whole log is.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from drain3 import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig

from triage_bot.store.coverage import FailedJob

# Where a repository keeps its own signatures (README, "Your own signatures").
DRAFT_DIR = ".github/triage-bot/patterns"
# drain3's defaults (similarity 0.4, depth 4), said here so that no drain3.ini in the current
# folder changes the clusters (TemplateMiner reads one when given no config).
SIMILARITY = 0.4
DEPTH = 4
ID_WORDS = 5
ID_CHARS = 60
_WORD = re.compile(r"[a-z][a-z0-9]+")
_PLACEHOLDER = re.compile(r"<[a-z*]+>")  # drain3's <*>, normalise's <n>, <time>, ...
# Control characters would move a terminal's cursor or end the shell's quoted word: a space
# stands in (the draft is a start to generalise, not the line byte for byte).
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Cluster:
    count: int  # unexplained jobs whose line has this template
    template: str  # drain3's, with <*> for the parts that vary
    example: str  # one job's line (the newest)
    example_url: str | None  # that job on GitHub
    signature_id: str  # the id the command drafts
    command: str | None  # None: `catalog new` cannot draft from this line (see `why_not`)
    why_not: str | None = None


Progress = Callable[[Iterable[FailedJob]], Iterable[FailedJob]]


def cluster_unexplained(
    jobs: Sequence[FailedJob], top: int = 10, progress: Progress | None = None
) -> list[Cluster]:
    """The `top` largest clusters of the unexplained jobs that have a best line, the largest
    first (ties: the first seen first)."""
    miner = _miner()
    counts: dict[int, int] = {}
    newest: dict[int, FailedJob] = {}
    lines = [job for job in jobs if not job.explained and job.best_line]
    for job in progress(lines) if progress else lines:
        cluster_id = miner.add_log_message(_clean(job.best_line or ""))["cluster_id"]
        counts[cluster_id] = counts.get(cluster_id, 0) + 1
        newest[cluster_id] = job  # jobs come oldest first
    templates = {cluster.cluster_id: cluster.get_template() for cluster in miner.drain.clusters}
    ranked = sorted(counts, key=lambda cluster_id: -counts[cluster_id])[:top]
    taken: set[str] = set()
    return [
        _cluster(counts[cid], templates[cid], newest[cid], _unique(_ident(templates[cid]), taken))
        for cid in ranked
    ]


def _miner() -> TemplateMiner:
    logging.getLogger("drain3").setLevel(logging.WARNING)  # it logs each new cluster at INFO
    config = TemplateMinerConfig()
    config.drain_sim_th = SIMILARITY
    config.drain_depth = DEPTH
    config.profiling_enabled = False
    return TemplateMiner(config=config)


def _clean(line: str) -> str:
    return CONTROL.sub(" ", line).strip()


def _cluster(count: int, template: str, job: FailedJob, ident: str) -> Cluster:
    example = _clean(job.best_line or "")
    if example.startswith("#!"):
        why = "the line starts with '#!', which a .log window reads as an expectation"
        return Cluster(count, template, example, job.url, ident, None, why)
    return Cluster(count, template, example, job.url, ident, catalog_new_command(example, ident))


def catalog_new_command(line: str, ident: str, folder: str = DRAFT_DIR) -> str:
    """A shell command that drafts signature `ident` in `folder` from `line` (its only line:
    `--from-log -` reads standard input)."""
    return (
        f"printf '%s\\n' {shlex.quote(line)} | triage-bot catalog new {shlex.quote(ident)} "
        f"--from-log - --line 1 --dir {shlex.quote(folder)}"
    )


def _ident(template: str) -> str:
    """A signature id (lower-case words joined by '-', as patterns/schema.json asks) from the
    template's first plain words."""
    words = _WORD.findall(_PLACEHOLDER.sub(" ", template).lower())
    ident = "-".join(words[:ID_WORDS])[:ID_CHARS].strip("-")
    return ident if len(ident) >= 2 else "unexplained"


def _unique(ident: str, taken: set[str]) -> str:
    candidate, number = ident, 2
    while candidate in taken:
        candidate, number = f"{ident}-{number}", number + 1
    taken.add(candidate)
    return candidate
