"""Whether a failure is "likely flaky", from the recorded job outcomes (job_outcomes.py), with
the occurrences that prove it (at most MAX_PROOFS). Pure: it reads only what it is given.

A failure key is likely flaky when, within the last FLAKY_WINDOW (14 days):

- **re-run**: the same job (same workflow, same full job name: one shard, not a sibling)
  failed with that key and then passed at the same commit (a re-run, or another run of the
  commit). One such occurrence, in any pull request or branch, is enough;
- **elsewhere**: it failed on at least MIN_OTHER_CONTEXTS other pull requests or base-branch
  commits (contexts other than the one asking) and, in each, the same job passed again
  without a change to the code: the same commit, or a commit with the same tree (a re-push,
  an amended message). A pass after a change (a fix, a revert) proves nothing.

Only a key specific enough to mean "the same failure" counts (pytorch/test-infra issues 4741,
5028, 5046, 5540: Dr. CI's wrong FLAKY verdicts came from lines and captures that every
failure of a kind shares, and from proofs taken from another job at the same commit): a
signature's key with a capture that names a test, a module, or a file with its line. Never a
signature without such a capture, never a best-guess line alone (`line:` keys), never a
value that names nothing (empty, a placeholder), never a signature the caller says is never
flaky (`never`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from triage_bot.store.job_outcomes import SIGNATURE_KEY, JobOutcome, JobOutcomes

FLAKY_WINDOW = timedelta(days=14)
MAX_PROOFS = 3
MIN_OTHER_CONTEXTS = 2

# Captures that name one test, or one module, whatever else the key holds.
TEST_CAPTURES = frozenset({"test", "testcase", "test_name", "test_id", "case", "spec"})
MODULE_CAPTURES = frozenset({"module"})
# A file names one place only with its line.
FILE_CAPTURES = frozenset({"file", "path"})
LINE_CAPTURES = frozenset({"line", "lineno"})
# Values that fill a capture without naming anything.
_PLACEHOLDERS = frozenset(
    {"", "-", "?", "...", "<unknown>", "unknown", "none", "null", "n/a", "<module>", "__main__",
     "main", "test", "tests", "all", "default"}
)  # fmt: skip
_HAS_WORD = re.compile(r"[A-Za-z_]{2}")
_LINE_NUMBER = re.compile(r"\d{1,7}")

Rule = Literal["re-run", "elsewhere"]
Context = tuple[str, str]  # ("pr", number) or ("commit", sha): where a failure happened


@dataclass(frozen=True)
class Proof:
    """One occurrence that proves a key flaky: the failed job and the pass that followed."""

    rule: Rule
    failed: JobOutcome
    passed: JobOutcome


@dataclass(frozen=True)
class Verdict:
    key: str
    likely_flaky: bool
    why: str  # one line: what proved it, or why the key cannot be judged
    proofs: tuple[Proof, ...] = ()  # newest first, at most MAX_PROOFS


def context_of(outcome: JobOutcome) -> Context:
    """A pull request's jobs are one context; a branch's own runs (the base branch), one a
    commit."""
    if outcome.pr_number is not None:
        return ("pr", str(outcome.pr_number))
    return ("commit", outcome.commit_sha)


def place_of(outcome: JobOutcome) -> Context:
    """Where a pass counts for a failure: the same pull request, or the same branch."""
    if outcome.pr_number is not None:
        return ("pr", str(outcome.pr_number))
    return ("branch", outcome.branch or "")


def specific(outcome: JobOutcome) -> bool:
    """Whether the outcome's key names one failure: a signature's, with a capture that names a
    test or a module, or a file with its line; never a best-guess line."""
    if not (outcome.failure_key or "").startswith(SIGNATURE_KEY) or not outcome.captures:
        return False
    values = {name.lower(): str(value).strip() for name, value in outcome.captures.items()}
    if any(_names_something(values.get(name, "")) for name in TEST_CAPTURES | MODULE_CAPTURES):
        return True
    has_file = any(_names_something(values.get(name, "")) for name in FILE_CAPTURES)
    has_line = any(_LINE_NUMBER.fullmatch(values.get(name, "")) for name in LINE_CAPTURES)
    return has_file and has_line


def _names_something(value: str) -> bool:
    return value.lower() not in _PLACEHOLDERS and bool(_HAS_WORD.search(value))


def judge(
    key: str,
    history: Iterable[JobOutcome],
    *,
    now: datetime,
    asking: Context | None = None,
    never: Collection[str] = (),
    window: timedelta = FLAKY_WINDOW,
) -> Verdict:
    """Whether `key` is likely flaky, from `history` (store.outcomes.history: the key's
    failures and every job at their commits). `asking`: the context of the failure being
    judged (its pull request), which the "elsewhere" rule leaves out; `never`: signatures that
    are never flaky."""
    since = now - window
    recent = [o for o in history if since <= o.finished_at <= now]
    failures = [o for o in recent if o.failed and o.failure_key == key]
    if not failures:
        return Verdict(key, False, "no recorded failure in the window")
    if failures[0].signature in never:
        return Verdict(key, False, f"{failures[0].signature} is never flaky")
    if not all(specific(f) for f in failures):
        return Verdict(key, False, "the key is too generic to mean the same failure")
    passes = [o for o in recent if o.passed]
    reruns = _proofs(failures, passes, "re-run", same_commit)
    if reruns:
        why = "failed, then passed on a re-run of the same commit"
        return Verdict(key, True, why, tuple(reruns[:MAX_PROOFS]))
    others = [f for f in failures if context_of(f) != asking]
    elsewhere = _proofs(others, passes, "elsewhere", same_code)
    contexts = {context_of(p.failed) for p in elsewhere}
    if len(contexts) >= MIN_OTHER_CONTEXTS:
        return Verdict(
            key,
            True,
            f"failed on {len(contexts)} other pull requests or commits and passed again there "
            "without a code change",
            _one_per_context(elsewhere),
        )
    return Verdict(key, False, "never passed again without a code change")


SameCode = Callable[[JobOutcome, JobOutcome], bool]


def same_commit(failed: JobOutcome, passed: JobOutcome) -> bool:
    return passed.commit_sha == failed.commit_sha


def same_code(failed: JobOutcome, passed: JobOutcome) -> bool:
    """The same commit, or another with the same tree: nothing in the code changed."""
    if same_commit(failed, passed):
        return True
    return failed.tree_sha is not None and passed.tree_sha == failed.tree_sha


def _proofs(
    failures: Sequence[JobOutcome], passes: Sequence[JobOutcome], rule: Rule, code: SameCode
) -> list[Proof]:
    """Each failure followed by a pass of the same job on the same code, newest first."""
    found = []
    for failed in failures:
        passed = next((p for p in passes if _passed_after(failed, p, code)), None)
        if passed is not None:
            found.append(Proof(rule, failed, passed))
    found.sort(key=lambda proof: proof.failed.finished_at, reverse=True)
    return found


def _one_per_context(proofs: Sequence[Proof]) -> tuple[Proof, ...]:
    seen: dict[Context, Proof] = {}
    for proof in proofs:  # newest first: each context's newest proof
        seen.setdefault(context_of(proof.failed), proof)
    return tuple(seen.values())[:MAX_PROOFS]


def _passed_after(failed: JobOutcome, passed: JobOutcome, code: SameCode) -> bool:
    """Whether `passed` is the same job as `failed`, in the same pull request (or on the
    same branch), on the same code, after it."""
    return (
        passed.repo == failed.repo
        and _same_workflow(failed, passed)
        and passed.job_full_name == failed.job_full_name
        and place_of(passed) == place_of(failed)
        and code(failed, passed)
        and _later(failed, passed)
    )


def _same_workflow(a: JobOutcome, b: JobOutcome) -> bool:
    if a.workflow_id is not None and b.workflow_id is not None:
        return a.workflow_id == b.workflow_id
    return a.workflow == b.workflow


def _later(failed: JobOutcome, passed: JobOutcome) -> bool:
    if passed.run_id == failed.run_id:
        return passed.run_attempt > failed.run_attempt
    return passed.finished_at > failed.finished_at


def judge_keys(
    outcomes: JobOutcomes,
    repo: str,
    keys: Collection[str],
    *,
    now: datetime,
    asking: Context | None = None,
    never: Collection[str] = (),
    window: timedelta = FLAKY_WINDOW,
) -> dict[str, Verdict]:
    """`judge` for each of `keys` of one repository, from one read of the store."""
    history = outcomes.history(repo, keys, since=now - window)
    return {
        key: judge(key, history, now=now, asking=asking, never=never, window=window) for key in keys
    }
