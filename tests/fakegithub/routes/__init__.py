"""The endpoints the fake serves, one module per area of GitHub's API."""

from __future__ import annotations

from ..routing import Route
from . import actions, app_auth, checks, extra, issues, oauth, repos


def all_routes() -> list[Route]:
    return [
        *app_auth.ROUTES,
        *actions.ROUTES,
        *issues.ROUTES,
        *repos.ROUTES,
        *extra.ROUTES,
        *checks.ROUTES,
        *oauth.ROUTES,
    ]
