"""What we know of each pull request's sticky comment: its id, the hash of its body, the head
commit it describes and whether a newer commit made it outdated.

A mixin of Store (store.py); the comment's sections are comment_sections.py's, and writing the
comment happens under the comment lock (store_locks.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, select, update

from triage_bot.store import schema
from triage_bot.store.schema import comments


@dataclass(frozen=True)
class Comment:
    repo: str
    pr_number: int
    comment_id: int | None
    body_hash: str | None
    head_sha: str | None
    outdated: bool
    updated_at: datetime


class CommentsMixin:
    engine: Engine

    def comment(self, repo: str, pr_number: int) -> Comment | None:
        """What we know of the sticky comment on a pull request (None: we never made one)."""
        columns = [getattr(comments.c, name) for name in Comment.__dataclass_fields__]
        query = select(*columns).where(comments.c.repo == repo, comments.c.pr_number == pr_number)
        with self.engine.connect() as conn:
            found = conn.execute(query).one_or_none()
        return None if found is None else Comment(*found)

    def record_comment(
        self, repo: str, pr_number: int, comment_id: int, body_hash: str, head_sha: str | None
    ) -> None:
        """Remember the comment as just created or edited; it is current again."""
        row = {
            "repo": repo,
            "pr_number": pr_number,
            "comment_id": comment_id,
            "body_hash": body_hash,
            "head_sha": head_sha,
            "outdated": False,
            "updated_at": schema.now(),
        }
        with self.engine.begin() as conn:
            schema.upsert(conn, comments, row, ["repo", "pr_number"])

    def mark_comment_outdated(self, repo: str, pr_number: int, old_head_sha: str) -> bool:
        """Flag the comment as describing `old_head_sha`; False when there is none for it."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(comments)
                .where(comments.c.repo == repo, comments.c.pr_number == pr_number)
                .where(comments.c.head_sha == old_head_sha)
                .values(outdated=True, updated_at=schema.now())
            )
        return result.rowcount > 0
