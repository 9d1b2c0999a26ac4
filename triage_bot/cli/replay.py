"""`triage-bot replay`: send a saved webhook payload to a server, signed as GitHub signs it.

For testing a running `triage-bot serve` by hand: the file's bytes are sent as they are, with
GitHub's headers: X-Hub-Signature-256 (the HMAC-SHA256 of the body with WEBHOOK_SECRET),
X-GitHub-Event and a new X-GitHub-Delivery id (the server drops a delivery id it has seen).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from triage_bot.core.sources import InputError
from triage_bot.service.server import WEBHOOK_PATH

TIMEOUT_S = 30.0
# What a header value may hold; the server judges the rest (and says why it refuses).
_HEADER_WORD = re.compile(r"[!-~]{1,100}")
# GitHub's webhook event names: a payload saved as EVENT/ACTION.json (the layout of GitHub's
# own examples) is sent as that event.
GITHUB_EVENTS = frozenset(
    {
        "branch_protection_configuration",
        "branch_protection_rule",
        "check_run",
        "check_suite",
        "code_scanning_alert",
        "commit_comment",
        "create",
        "custom_property",
        "custom_property_values",
        "delete",
        "dependabot_alert",
        "deploy_key",
        "deployment",
        "deployment_protection_rule",
        "deployment_review",
        "deployment_status",
        "discussion",
        "discussion_comment",
        "fork",
        "github_app_authorization",
        "gollum",
        "installation",
        "installation_repositories",
        "installation_target",
        "issue_comment",
        "issues",
        "label",
        "marketplace_purchase",
        "member",
        "membership",
        "merge_group",
        "meta",
        "milestone",
        "org_block",
        "organization",
        "package",
        "page_build",
        "personal_access_token_request",
        "ping",
        "project",
        "project_card",
        "project_column",
        "projects_v2",
        "projects_v2_item",
        "public",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "pull_request_review_thread",
        "push",
        "registry_package",
        "release",
        "repository",
        "repository_advisory",
        "repository_dispatch",
        "repository_import",
        "repository_ruleset",
        "repository_vulnerability_alert",
        "secret_scanning_alert",
        "secret_scanning_alert_location",
        "security_advisory",
        "security_and_analysis",
        "sponsorship",
        "star",
        "status",
        "sub_issues",
        "team",
        "team_add",
        "watch",
        "workflow_dispatch",
        "workflow_job",
        "workflow_run",
    }
)


@dataclass(frozen=True)
class Answer:
    status: int
    text: str  # the status and the server's reason, for the terminal

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def event_for(path: Path, given: str | None) -> str:
    if given is not None:
        if not _HEADER_WORD.fullmatch(given):
            raise InputError(f"--event {given!r}: not an event name (e.g. workflow_run)")
        return given
    folder = path.resolve().parent.name
    if folder in GITHUB_EVENTS:
        return folder
    raise InputError(
        f"{path}: cannot tell the event from the folder name {folder!r}: give --event "
        "(e.g. --event workflow_run), or keep the file in a folder named after it"
    )


def webhook_url(url: str) -> str:
    """The URL as given, or the server's webhook path on it when it names none."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"--to {url!r}: not an http(s) URL")
    if parts.path in ("", "/"):
        parts = parts._replace(path=WEBHOOK_PATH)
    return urlunsplit(parts)


def read_payload(path: Path) -> bytes:
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not a JSON payload: {exc}") from exc
    if not isinstance(payload, dict):
        raise InputError(f"{path}: not a JSON object, as every webhook payload is")
    return body


def replay(
    path: Path, url: str, secret: str, *, event: str | None = None, delivery: str | None = None
) -> Answer:
    """Send the payload; the answer. InputError for what the person gave; an unreachable
    server is an answer too (status 0), not an error."""
    target = webhook_url(url)
    name = event_for(path, event)
    if delivery is not None and not _HEADER_WORD.fullmatch(delivery):
        raise InputError(f"--delivery {delivery!r}: not a delivery id (e.g. a uuid)")
    body = read_payload(path)
    delivery = delivery or str(uuid.uuid4())
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    sent = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/triage-bot-replay",
        "X-GitHub-Event": name,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={digest}",
    }
    try:
        response = httpx.post(target, content=body, headers=sent, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        return Answer(0, f"{target}: no answer: {exc}")
    return Answer(response.status_code, _describe(response, delivery, name))


def _describe(response: httpx.Response, delivery: str, event: str) -> str:
    head = f"{response.status_code} {response.reason_phrase}"
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "reason" in answer:
        reason = f"{answer.get('outcome', '')}: {answer['reason']}".lstrip(": ")
    else:
        reason = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
    tail = f": {reason}" if reason else ""
    return f"{head}{tail} (event {event}, delivery {delivery})"
