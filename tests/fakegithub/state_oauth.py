"""The user side: who is signed in to the fake's web host, the OAuth web flow's codes, user
access tokens, and which repositories of an App's installations a user can read.

A test chooses the user whose browser is signed in to GitHub (`signed_in`); the authorize page
then hands back a code for that user, as github.com does for a user who already authorized
the App. A user reads a repository they own or hold a role on (`State.grant`): GitHub lists
only repositories the user has explicit permission on through /user/installations.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from .models import App, Installation, OAuthCode, Repo, Role, User, UserToken
from .state_core import StateCore

CODE_LIFETIME = dt.timedelta(minutes=10)  # GitHub's: "codes expire after 10 minutes"
USER_TOKEN_LIFETIME = dt.timedelta(hours=8)  # a GitHub App's expiring user access token
# What each role may do, as the `permissions` of a listed repository says it.
_ROLE_RIGHTS: dict[Role, tuple[str, ...]] = {
    "read": ("pull",),
    "triage": ("pull", "triage"),
    "write": ("pull", "triage", "push"),
    "maintain": ("pull", "triage", "push", "maintain"),
    "admin": ("pull", "triage", "push", "maintain", "admin"),
}


class OAuthState(StateCore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.signed_in: str | None = None  # the login of the browser's GitHub session
        self.oauth_codes: dict[str, OAuthCode] = {}
        self.user_tokens: dict[str, UserToken] = {}

    def issue_code(self, app: App, login: str, redirect_uri: str | None) -> OAuthCode:
        with self.lock:
            code = OAuthCode(
                secrets.token_hex(10), app.id, login, redirect_uri, self.now() + CODE_LIFETIME
            )
            self.oauth_codes[code.value] = code
            return code

    def redeem_code(self, app: App, value: str, redirect_uri: str | None) -> UserToken | str:
        """The user token for a code (used up), or the error GitHub names."""
        with self.lock:
            code = self.oauth_codes.pop(value, None)
            if code is None or code.app_id != app.id or code.expires_at <= self.now():
                return "bad_verification_code"
            if redirect_uri and code.redirect_uri and redirect_uri != code.redirect_uri:
                return "redirect_uri_mismatch"
            return self.issue_user_token(app, code.login)

    def issue_user_token(self, app: App, login: str) -> UserToken:
        with self.lock:
            token = UserToken(
                "ghu_" + secrets.token_hex(18), app.id, login, self.now() + USER_TOKEN_LIFETIME
            )
            self.user_tokens[token.value] = token
            return token

    def role_of(self, user: User, repo: Repo) -> Role | None:
        with self.lock:
            if repo.owner.id == user.id:
                return "admin"
            return self.roles.get((repo.id, user.login))

    def readable_in(self, installation: Installation, user: User) -> list[tuple[Repo, Role]]:
        """The installation's repositories the user holds a role on, with that role."""
        with self.lock:
            reachable = self.installation_repos(installation)
            roles = ((repo, self.role_of(user, repo)) for repo in reachable)
            return [(repo, role) for repo, role in roles if role is not None]

    def user_installations(self, app: App, user: User) -> list[Installation]:
        """The App's installations in which the user can read at least one repository."""
        with self.lock:
            mine = [i for i in self.installations.values() if i.app_id == app.id]
            return [i for i in mine if self.readable_in(i, user)]

    def installation_repos(self, installation: Installation) -> list[Repo]:
        raise NotImplementedError  # State's (state.py)


def rights(role: Role) -> dict[str, bool]:
    granted = _ROLE_RIGHTS[role]
    return {right: right in granted for right in ("admin", "maintain", "push", "triage", "pull")}
