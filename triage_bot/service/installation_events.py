"""The App's installation events (`installation`, `installation_repositories`): which
accounts and repositories the App is installed on, as InstallationChanges for the store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage_bot.service.event_decision import Decision, InstallationChange
from triage_bot.service.payload_fields import (
    Refused,
    describe,
    is_storable_text,
    read_full_name,
    read_int,
    read_obj,
    read_opt_str,
    read_str,
)


def on_installation(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    inst = read_obj(payload, "installation")
    inst_id = read_int(inst, "id", "installation.id")
    if action == "deleted":
        change = InstallationChange("delete", inst_id)
        return Decision("record", f"installation {inst_id} deleted", installation=change)
    if action not in ("created", "new_permissions_accepted", "suspend", "unsuspend"):
        return Decision("ignored", f"installation action {action!r} changes nothing we keep")
    repos = payload.get("repositories")
    change = InstallationChange(
        "upsert",
        inst_id,
        account=_account(inst),
        # suspend/unsuspend carry no repository list: keep the one we have
        repos=_repo_names(repos, "repositories") if repos is not None else (),
        repository_selection=read_opt_str(
            inst, "repository_selection", "installation.repository_selection"
        ),
        suspended=_suspended(action, inst),
    )
    return Decision("record", f"installation {inst_id} {action}", installation=change)


def on_installation_repositories(payload: Mapping[str, Any]) -> Decision:
    action = read_str(payload, "action")
    if action not in ("added", "removed"):
        return Decision("ignored", f"installation_repositories action {action!r} is unknown")
    inst = read_obj(payload, "installation")
    field = f"repositories_{action}"
    change = InstallationChange(
        "add_repos" if action == "added" else "remove_repos",
        read_int(inst, "id", "installation.id"),
        account=_account(inst),
        repos=_repo_names(payload.get(field), field),
        repository_selection=read_opt_str(payload, "repository_selection"),
    )
    reason = f"installation {change.installation_id}: {len(change.repos)} repositories {action}"
    return Decision("record", reason, installation=change)


def _suspended(action: str, inst: Mapping[str, Any]) -> bool:
    if action in ("suspend", "unsuspend"):
        return action == "suspend"
    return inst.get("suspended_at") is not None


def _account(inst: Mapping[str, Any]) -> str | None:
    account = inst.get("account")
    if isinstance(account, Mapping):
        login = account.get("login") or account.get("slug")  # enterprises have a slug
        return login if isinstance(login, str) and is_storable_text(login, 255) else None
    return None


def _repo_names(value: object, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise Refused(f"{field} must be a list, got {describe(value)}")
    names = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise Refused(f"{field}[{index}] must be an object, got {describe(item)}")
        names.append(read_full_name(item, f"{field}[{index}].full_name"))
    return tuple(names)
