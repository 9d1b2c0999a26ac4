"""The flaky rules (store/flaky.py) applied to a triage: each failure group of the report
judged on the recorded history of its failure key, the verdict and its proofs kept with the
group for the comment, the JSON and `/triage retry`.

A group's key is the one its jobs were recorded under (outcomes.failure_of): the signature and
its `group_by` captures. The pull request being triaged is the asking context: its own
failures are not counted as "elsewhere" (they are what is being judged), though a re-run of
its own commit that passed proves the failure flaky as anywhere else.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from triage_bot.core.report import FlakyProof, FlakyVerdict, Group, Occurrence, Report
from triage_bot.store.flaky import Context, Verdict, judge_keys
from triage_bot.store.job_outcomes import JobOutcome, signature_key
from triage_bot.store.store import Store
from triage_bot.triage.outcomes import captures_key

# A job's finish time is GitHub's clock, the window's end ours: a job that just finished may
# be stamped a little after our "now". The window ends this much later, so it still counts.
CLOCK_SKEW = timedelta(minutes=10)


def group_failure_key(group: Group) -> str:
    """The failure key the group's jobs are recorded under."""
    values = [group.example.captures.get(name, "") for name in group.signature.group_by]
    return signature_key(group.signature.id, captures_key(values))


def judge_report(
    store: Store,
    repo: str,
    report: Report,
    *,
    pr_number: int | None = None,
    now: datetime | None = None,
) -> Report:
    """A copy of the report whose groups carry what the history says of them."""
    if not report.groups:
        return report
    keys = {group_failure_key(group) for group in report.groups}
    never = {group.signature.id for group in report.groups if group.signature.never_flaky}
    asking: Context | None = ("pr", str(pr_number)) if pr_number is not None else None
    verdicts = judge_keys(
        store.outcomes,
        repo,
        keys,
        now=now or datetime.now(UTC) + CLOCK_SKEW,
        asking=asking,
        never=never,
    )
    groups = [
        replace(group, flaky=flaky_verdict(verdicts[group_failure_key(group)]))
        for group in report.groups
    ]
    # The new failures first, what is likely flaky after them (stable: each keeps its order;
    # the base branch's comparison then puts what also fails there last).
    groups.sort(key=lambda group: group.likely_flaky)
    return replace(report, groups=groups)


def likely_flaky_keys(report: Report) -> set[str]:
    """The failure keys of the report's groups that the history calls likely flaky."""
    return {group_failure_key(group) for group in report.groups if group.likely_flaky}


def flaky_verdict(verdict: Verdict) -> FlakyVerdict:
    proofs = tuple(
        FlakyProof(proof.rule, occurrence(proof.failed), occurrence(proof.passed))
        for proof in verdict.proofs
    )
    return FlakyVerdict(verdict.likely_flaky, verdict.why, proofs)


def occurrence(outcome: JobOutcome) -> Occurrence:
    return Occurrence(
        outcome.url, outcome.commit_sha, outcome.run_id, outcome.run_attempt, outcome.pr_number
    )
