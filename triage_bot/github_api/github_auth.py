"""Who the bot is to GitHub: the App (a JWT, then installation tokens) or a plain token.

The App signs a short JWT (PyGithub's `Auth.AppAuth`: iat backdated 60 s for clock drift,
exp 5 min ahead, GitHub allows at most 10) and trades it for an installation token, which
lasts an hour. Tokens are cached per installation until `refresh_margin` (5 min) before they
expire, so a triage that starts with a cached token never sees it lapse halfway; one lock per
installation makes concurrent workers share one exchange instead of racing for tokens.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

from github import Auth

from triage_bot.github_api.github_http import ClientOptions, Transport
from triage_bot.github_api.github_retry import GitHubError

INSTALLATION_TTL = 600.0  # seconds a repo -> installation look-up is trusted (reinstalls)


class TokenAuth:
    """A fixed token (the CLI's GITHUB_TOKEN, a personal access token).

    `login` is the account whose comments are ours; None: asked of GET /user when needed.
    In GitHub Actions, GITHUB_TOKEN writes as `github-actions[bot]` and cannot read /user,
    so pass that login there.
    """

    def __init__(self, token: str, *, login: str | None = None) -> None:
        self._token, self.login = token, login

    def authorization(self) -> str:
        return f"token {self._token}"

    def invalidate(self) -> bool:
        return False  # nothing to renew: a refused fixed token stays refused


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds


class _JwtCredentials:
    def __init__(self, signer: Auth.AppAuth) -> None:
        self._signer = signer

    def authorization(self) -> str:
        return f"Bearer {self._signer.create_jwt()}"  # a fresh one each time: it is cheap

    def invalidate(self) -> bool:
        return False


class InstallationCredentials:
    """An installation's token, renewed through its App whenever the cached one is stale."""

    def __init__(self, app: AppAuth, installation_id: int) -> None:
        self.app, self.installation_id = app, installation_id

    def authorization(self) -> str:
        return f"token {self.app.installation_token(self.installation_id).token}"

    def invalidate(self) -> bool:
        self.app.forget_token(self.installation_id)
        return True


class AppAuth:
    """A GitHub App: its JWT, its installations' tokens (cached), and its identity.

    Thread-safe; meant to live as long as the process (see `github.shared_app_auth`), so every
    client of one installation shares one token.
    """

    def __init__(
        self,
        app_id: int,
        private_key_pem: str,
        api_url: str,
        *,
        options: ClientOptions | None = None,
        refresh_margin: float = 300.0,
    ) -> None:
        self.app_id, self.api_url = app_id, api_url
        self.options = options or ClientOptions()
        self.refresh_margin = refresh_margin
        self._signer = Auth.AppAuth(app_id, private_key_pem)
        self._transport = Transport(api_url, _JwtCredentials(self._signer), self.options)
        self._lock = threading.Lock()
        self._token_locks: dict[int, threading.Lock] = {}
        self._tokens: dict[int, InstallationToken] = {}
        self._installations: dict[str, tuple[int, float]] = {}
        self._slug: str | None = None

    def close(self) -> None:
        self._transport.close()

    def jwt(self) -> str:
        return self._signer.create_jwt()

    @property
    def slug(self) -> str:
        """The App's slug, from GET /app (once)."""
        if self._slug is None:
            body = self._transport.json("GET", "/app", endpoint="/app")
            self._slug = str(body["slug"])
        return self._slug

    @property
    def bot_login(self) -> str:
        """The account that authors what the App writes."""
        return f"{self.slug}[bot]"

    def installation_for_repo(self, repo: str) -> int:
        """The id of the installation that reaches `owner/name`; GitHubStatusError 404 if none."""
        key = repo.lower()  # GitHub matches names case-insensitively
        with self._lock:
            cached = self._installations.get(key)
        if cached is not None and time.monotonic() - cached[1] < INSTALLATION_TTL:
            return cached[0]
        body = self._transport.json(
            "GET", f"/repos/{repo}/installation", endpoint="/repos/{owner}/{repo}/installation"
        )
        installation_id = int(body["id"])
        with self._lock:
            self._installations[key] = (installation_id, time.monotonic())
        return installation_id

    def installation_token(self, installation_id: int) -> InstallationToken:
        """A token for the installation valid for at least `refresh_margin` more seconds,
        or (when GitHub hands out shorter ones) the freshest there is."""
        # One exchange per installation at a time: the others wait, then reuse its token.
        with self._token_lock(installation_id):
            cached = self._tokens.get(installation_id)
            if cached is not None and cached.expires_at - time.time() > self.refresh_margin:
                return cached
            token = self._exchange(installation_id)
            self._tokens[installation_id] = token
            return token

    def forget_token(self, installation_id: int) -> None:
        """Drop a cached token GitHub refused, so the next request exchanges a new one."""
        with self._token_lock(installation_id):
            self._tokens.pop(installation_id, None)

    def _token_lock(self, installation_id: int) -> threading.Lock:
        with self._lock:
            return self._token_locks.setdefault(installation_id, threading.Lock())

    def credentials(self, installation_id: int) -> InstallationCredentials:
        return InstallationCredentials(self, installation_id)

    def _exchange(self, installation_id: int) -> InstallationToken:
        body = self._transport.json(
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
            endpoint="/app/installations/{installation_id}/access_tokens",
            idempotent=True,  # a second exchange only mints a second token: harmless
        )
        try:
            expires = dt.datetime.fromisoformat(str(body["expires_at"]))
        except (KeyError, ValueError) as error:
            raise GitHubError(f"installation token without a valid expires_at: {error}") from None
        return InstallationToken(str(body["token"]), expires.timestamp())
