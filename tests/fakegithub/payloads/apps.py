"""The App, its installations, installation tokens and the rate-limit overview."""

from __future__ import annotations

from ..http_types import JsonObject
from ..models import App, Installation, Repo, Token
from ..ratelimit import Quota
from .core import Urls, iso_required, node_id, repo_payload, user_payload


def app_payload(urls: Urls, app: App, installations_count: int) -> JsonObject:
    stamp = iso_required(app.created_at)
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": node_id("Integration", app.id),
        "client_id": app.client_id,
        "owner": user_payload(urls, app.owner),
        "name": app.name,
        "description": "Triages failed CI jobs (fake GitHub)",
        "external_url": f"{urls.web}/apps/{app.slug}/about",
        "html_url": f"{urls.web}/apps/{app.slug}",
        "created_at": stamp,
        "updated_at": stamp,
        "permissions": dict(app.permissions),
        "events": list(app.events),
        "installations_count": installations_count,
    }


def installation_payload(urls: Urls, installation: Installation, app: App) -> JsonObject:
    account = installation.account
    settings = (
        f"{urls.web}/organizations/{account.login}/settings/installations/{installation.id}"
        if account.type == "Organization"
        else f"{urls.web}/settings/installations/{installation.id}"
    )
    stamp = iso_required(installation.created_at)
    return {
        "id": installation.id,
        "client_id": app.client_id,
        "account": user_payload(urls, account),
        "repository_selection": installation.repository_selection,
        "access_tokens_url": f"{urls.api}/app/installations/{installation.id}/access_tokens",
        "repositories_url": f"{urls.api}/installation/repositories",
        "html_url": settings,
        "app_id": app.id,
        "app_slug": app.slug,
        "target_id": account.id,
        "target_type": "Organization" if account.type == "Organization" else "User",
        "permissions": dict(installation.permissions),
        "events": list(installation.events),
        "created_at": stamp,
        "updated_at": stamp,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def token_payload(urls: Urls, token: Token, repos: list[Repo] | None) -> JsonObject:
    """`repos` is given only when the token was narrowed to some repositories."""
    payload: JsonObject = {
        "token": token.value,
        "expires_at": iso_required(token.expires_at),
        "permissions": dict(token.permissions),
        "repository_selection": "selected" if repos is not None else "all",
    }
    if repos is not None:
        payload["repositories"] = [repo_payload(urls, repo) for repo in repos]
    return payload


def _limit(quota: Quota) -> JsonObject:
    return {
        "limit": quota.limit,
        "remaining": quota.remaining,
        "reset": quota.reset,
        "used": quota.used,
    }


def rate_limit_payload(core: Quota) -> JsonObject:
    untouched = Quota(30, 30, core.reset, 0, "search")
    return {
        "resources": {
            "core": _limit(core),
            "search": _limit(untouched),
            "graphql": _limit(Quota(5000, 5000, core.reset, 0, "graphql")),
            "integration_manifest": _limit(Quota(5000, 5000, core.reset, 0)),
        },
        "rate": _limit(core),
    }
