"""Check runs: create, update, find again by external_id, and the annotations already sent.

A mixin of GitHubClient (github_client.py). Needs the App's `checks: write` permission (a
token of GitHub Actions has it too; a personal token cannot create check runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triage_bot.github_api.github_http import Transport

_CHECK_RUNS = "/repos/{owner}/{repo}/check-runs"
_CHECK_RUN = "/repos/{owner}/{repo}/check-runs/{check_run_id}"


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    head_sha: str
    external_id: str | None
    html_url: str
    annotations_count: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckRun:
        output = data.get("output") or {}
        return cls(
            id=int(data["id"]),
            name=str(data.get("name") or ""),
            head_sha=str(data.get("head_sha") or ""),
            external_id=data.get("external_id") or None,
            html_url=str(data.get("html_url") or ""),
            annotations_count=int(output.get("annotations_count") or 0),
        )


class ChecksMixin:
    _api: Transport

    def create_check_run(self, repo: str, body: dict[str, Any]) -> CheckRun:
        """POST a check run (`name`, `head_sha`, and any of GitHub's optional fields).

        Not resent after a 5xx or timeout (it may exist now): callers find it again by its
        external_id before creating another."""
        answer = self._api.json(
            "POST", f"/repos/{repo}/check-runs", endpoint=_CHECK_RUNS, json=body
        )
        return CheckRun.from_json(answer)

    def update_check_run(self, repo: str, check_run_id: int, body: dict[str, Any]) -> CheckRun:
        """PATCH a check run. GitHub appends the annotations of every update to the ones it
        has: resending one shows it twice, so this is not idempotent when it carries any."""
        carries_annotations = bool((body.get("output") or {}).get("annotations"))
        answer = self._api.json(
            "PATCH",
            f"/repos/{repo}/check-runs/{check_run_id}",
            endpoint=_CHECK_RUN,
            json=body,
            idempotent=not carries_annotations,
        )
        return CheckRun.from_json(answer)

    def find_check_run(
        self, repo: str, head_sha: str, name: str, external_id: str
    ) -> CheckRun | None:
        """The check run called `name` with `external_id` on commit `head_sha`, if any."""
        pages = self._api.paginate(
            f"/repos/{repo}/commits/{head_sha}/check-runs",
            endpoint="/repos/{owner}/{repo}/commits/{ref}/check-runs",
            params={"check_name": name, "filter": "all"},
            key="check_runs",
        )
        for data in pages:
            found = CheckRun.from_json(data)
            if found.external_id == external_id:
                return found
        return None

    def check_run_annotations(self, repo: str, check_run_id: int) -> list[dict[str, Any]]:
        """Every annotation the check run carries, in the order they were sent."""
        return list(
            self._api.paginate(
                f"/repos/{repo}/check-runs/{check_run_id}/annotations",
                endpoint=f"{_CHECK_RUN}/annotations",
            )
        )
