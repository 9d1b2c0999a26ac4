"""The signed-in user (GET /user), their installations and their repositories' listings."""

from __future__ import annotations

from ..http_types import JsonObject
from ..models import App, Installation, Repo, Role, User
from ..state_oauth import rights
from .apps import installation_payload
from .core import Urls, iso_required, repo_payload, user_payload


def private_user_payload(urls: Urls, user: User, joined: str) -> JsonObject:
    """What a user's own token reads of them: `private-user`, with the private counts."""
    return {
        **user_payload(urls, user),
        "user_view_type": "private",
        "name": user.name,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "notification_email": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": joined,
        "updated_at": joined,
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
    }


def user_installations_payload(
    urls: Urls, installations: list[Installation], app: App, total: int
) -> JsonObject:
    return {
        "total_count": total,
        "installations": [installation_payload(urls, i, app) for i in installations],
    }


def user_repositories_payload(
    urls: Urls, installation: Installation, listed: list[tuple[Repo, Role]], total: int
) -> JsonObject:
    return {
        "total_count": total,
        "repository_selection": installation.repository_selection,
        "repositories": [
            {**repo_payload(urls, repo), "permissions": rights(role)} for repo, role in listed
        ],
    }


def joined_at(app: App) -> str:
    """Users carry no creation time in the fake: the App's stands in."""
    return iso_required(app.created_at)
