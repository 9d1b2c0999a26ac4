"""Who the bot is to GitHub: the App (a JWT, then installation tokens) or a plain token.

PyGithub signs the App's JWT (`Auth.AppAuth`: iat backdated 60 s for clock drift, exp 5 min
ahead) and sends the three App requests below. What it lacks is sharing: its
`AppInstallationAuth` caches a token per object, renews it 20 s before expiry, and lets
concurrent workers race for tokens.
`AppAuth` keeps one token per installation for the whole process, renewed `refresh_margin`
(5 min) before expiry so a triage that starts with it never sees it lapse, one exchange at a
time per installation, and can drop a token GitHub refused.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

from github import Auth

from triage_bot.github_api.retry import ClientOptions, GitHubError, GitHubRequester

INSTALLATION_TTL = 600.0  # seconds a repo -> installation look-up is trusted (reinstalls)


class TokenAuth(Auth.Token):
    """A fixed token (the CLI's GITHUB_TOKEN, a personal access token).

    `login` is the account whose comments are ours; None: asked of GET /user when needed.
    In GitHub Actions, GITHUB_TOKEN writes as `github-actions[bot]` and cannot read /user,
    so pass that login there.
    """

    def __init__(self, token: str, *, login: str | None = None) -> None:
        super().__init__(token)
        self.login = login

    def invalidate(self) -> bool:
        return False  # nothing to renew: a refused fixed token stays refused


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds


class InstallationAuth(Auth.Auth):
    """An installation's token as PyGithub asks for it, from its App's shared cache."""

    def __init__(self, app: AppAuth, installation_id: int) -> None:
        self.app, self.installation_id = app, installation_id

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self.app.installation_token(self.installation_id).token

    def invalidate(self) -> bool:
        """Forget the cached token GitHub refused (401); the next request gets a new one."""
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
        # A second token exchange only mints a second token: harmless, so resent after a 5xx.
        self._api = GitHubRequester(
            Auth.AppAuth(app_id, private_key_pem), api_url, self.options, post_is_safe=True
        )
        self._lock = threading.Lock()  # PyGithub's requester is not safe across threads
        self._token_locks: dict[int, threading.Lock] = {}
        self._tokens: dict[int, InstallationToken] = {}
        self._installations: dict[str, tuple[int, float]] = {}
        self._slug: str | None = None

    def close(self) -> None:
        self._api.close()

    def _get(self, url: str) -> dict[str, object]:
        with self._lock:
            _, body = self._api.requestJsonAndCheck("GET", url)
        return dict(body)

    @property
    def slug(self) -> str:
        """The App's slug, from GET /app (once)."""
        if self._slug is None:
            self._slug = str(self._get("/app")["slug"])
        return self._slug

    @property
    def bot_login(self) -> str:
        """The account that authors what the App writes."""
        return f"{self.slug}[bot]"

    def installation_for_repo(self, repo: str) -> int:
        """The id of the installation that reaches `owner/name`; GitHubStatusError 404 if none."""
        key = repo.lower()  # GitHub matches names case-insensitively
        cached = self._installations.get(key)
        if cached is not None and time.monotonic() - cached[1] < INSTALLATION_TTL:
            return cached[0]
        installation_id = int(str(self._get(f"/repos/{repo}/installation")["id"]))
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

    def credentials(self, installation_id: int) -> InstallationAuth:
        return InstallationAuth(self, installation_id)

    def _exchange(self, installation_id: int) -> InstallationToken:
        url = f"/app/installations/{installation_id}/access_tokens"
        with self._lock:
            _, body = self._api.requestJsonAndCheck("POST", url)
        try:
            expires = dt.datetime.fromisoformat(str(body["expires_at"]))
        except (KeyError, ValueError) as error:
            raise GitHubError(f"installation token without a valid expires_at: {error}") from None
        return InstallationToken(str(body["token"]), expires.timestamp())
