"""app.yml, the GitHub App manifest: GitHub's format, the least permissions issue #4 needs, and
only events that the server acts on."""

from __future__ import annotations

from typing import Any

import yaml
from helpers import ROOT

from triage_bot.service import events
from triage_bot.service.server import WEBHOOK_PATH

# issue_comment carries the /triage commands (commands.py); it joins events.HANDLED_EVENTS
# with them, and is listed here until then.
ACTED_ON = events.HANDLED_EVENTS | {"issue_comment"}
# Every App gets these without subscribing; a manifest that lists them is refused.
INSTALLATION_EVENTS = {"installation", "installation_repositories"}
MANIFEST_KEYS = {
    "name",
    "url",
    "description",
    "hook_attributes",
    "redirect_url",
    "callback_urls",
    "setup_url",
    "public",
    "default_events",
    "default_permissions",
    "request_oauth_on_install",
    "setup_on_update",
}


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "app.yml").read_text(encoding="utf-8"))
    return loaded


def test_manifest_is_in_githubs_format() -> None:
    app = manifest()
    assert set(app) <= MANIFEST_KEYS
    assert app["name"] and app["url"].startswith("https://")
    assert app["hook_attributes"]["url"].endswith(WEBHOOK_PATH)
    assert app["hook_attributes"]["active"] is True
    assert app["redirect_url"].startswith("https://")
    assert app["public"] is False


def test_permissions_are_exactly_what_issue_4_needs() -> None:
    assert manifest()["default_permissions"] == {
        "actions": "write",  # re-runs of failed jobs (reading runs, jobs and logs too)
        "checks": "write",
        "contents": "read",  # the repository's config, signatures and annotated files
        "issues": "write",  # the comment and replies
        "pull_requests": "write",
        "metadata": "read",
    }


def test_every_subscribed_event_is_one_the_server_acts_on() -> None:
    subscribed = manifest()["default_events"]
    assert len(subscribed) == len(set(subscribed))
    assert set(subscribed) <= ACTED_ON
    assert not set(subscribed) & INSTALLATION_EVENTS
    assert set(subscribed) == {"workflow_run", "workflow_job", "pull_request", "issue_comment"}
