"""Each failing workflow's section of a pull request's one comment.

A head commit often fails in more than one workflow (tests, lint, a docs build), each a run
of its own, triaged by its own job. Each triage stores its run's section (rendered markdown)
keyed by pull request and workflow, and the comment is put together from the sections of the
pull request's current head commit, under the comment lock (triage_bot.triage.pipeline). A section
is replaced by a later run or attempt of its workflow, never by an older one arriving late,
and the sections of earlier head commits are left out of the comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Engine, and_, or_, select

from triage_bot.store import schema
from triage_bot.store.schema import comment_sections


@dataclass(frozen=True)
class Section:
    repo: str
    pr_number: int
    workflow: str  # the workflow's id (or its name when GitHub gave no id)
    title: str
    run_id: int
    run_attempt: int
    head_sha: str
    body: str
    # What was wrong with the repository's triage-bot files when the run was triaged
    # ("file:line: reason"): the comment shows those of its latest section, once.
    problems: tuple[str, ...] = ()


class CommentSections:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def save(self, section: Section) -> bool:
        """Store `section`; False (nothing written) when a later run or attempt of its
        workflow on the same head commit is stored already."""
        row = {name: getattr(section, name) for name in Section.__dataclass_fields__}
        row["problems"] = list(section.problems)
        with self.engine.begin() as conn:
            return schema.upsert(
                conn,
                comment_sections,
                row | {"updated_at": schema.now()},
                ["repo", "pr_number", "workflow"],
                where=_supersedes(section),
            )

    def of_head(self, repo: str, pr_number: int, head_sha: str) -> list[Section]:
        """The sections for the pull request's head commit `head_sha`, by workflow name."""
        stored = comment_sections.c
        return self._select(
            stored.repo == repo, stored.pr_number == pr_number, stored.head_sha == head_sha
        )

    def of_workflow(self, repo: str, head_sha: str, workflow: str) -> list[Section]:
        """The sections of one workflow for head commit `head_sha`, one per pull request."""
        stored = comment_sections.c
        return self._select(
            stored.repo == repo, stored.head_sha == head_sha, stored.workflow == workflow
        )

    def _select(self, *where: ColumnElement[bool]) -> list[Section]:
        columns = [getattr(comment_sections.c, name) for name in Section.__dataclass_fields__]
        query = select(*columns).where(*where)
        query = query.order_by(comment_sections.c.title, comment_sections.c.workflow)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings()
            return [Section(**{**row, "problems": tuple(row["problems"])}) for row in rows]


def _supersedes(section: Section) -> ColumnElement[bool]:
    stored = comment_sections.c
    return or_(
        # Posting is for the pull request's current head only, so another head is older.
        stored.head_sha != section.head_sha,
        stored.run_id < section.run_id,
        and_(stored.run_id == section.run_id, stored.run_attempt <= section.run_attempt),
    )
