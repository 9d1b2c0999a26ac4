"""FakeGitHub: the API host and the log host around one State, started and stopped together."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from types import TracebackType

from .api import ApiApp
from .faults import Faults
from .http_server import LoopbackServer, bindable
from .keys import app_key_pair
from .loghost import LogHostApp
from .loglinks import LogLinks
from .models import Installation, RecordedRequest, Repo
from .openapi import OpenApiSpec
from .payloads.core import Urls
from .problems import Problems
from .ratelimit import RateLimiter
from .state import State

API_HOST = "127.0.0.1"
# Another loopback address, so the log URL is cross-origin like GitHub's blob store and
# HTTP clients drop Authorization on the redirect; another port on 127.0.0.1 if unavailable.
LOG_HOST = "127.0.0.2"
APP_SLUG = "triage-bot"


class FakeGitHub:
    def __init__(self) -> None:
        keys = app_key_pair()
        self.state = State()
        self.problems = Problems()
        self._rate_limiter = RateLimiter()
        self.faults = Faults(self._rate_limiter)
        self._stopping = threading.Event()
        self._log_links = LogLinks()
        api_app = ApiApp(
            self.state,
            self.faults,
            self._rate_limiter,
            OpenApiSpec.load(),
            self._log_links,
            self.problems,
            self._stopping,
        )
        log_app = LogHostApp(
            self.state, self.faults, self._log_links, self.problems, self._stopping
        )
        self._api = LoopbackServer(api_app, API_HOST, self._stopping)
        self._logs = LoopbackServer(
            log_app, LOG_HOST if bindable(LOG_HOST) else API_HOST, self._stopping
        )
        self.base_url = self._api.base_url
        self.log_base_url = self._logs.base_url
        api_app.urls = Urls(api=self.base_url, web=self.base_url)
        self._log_links.base_url = self.log_base_url
        self.private_key_pem = keys.private_pem
        self.webhook_secret = "whsec-" + secrets.token_hex(16)
        self.app = self.state.add_app(APP_SLUG, keys.public_pem)
        self.app_id = self.app.id

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        self._api.start()
        self._logs.start()
        return self

    def stop(self) -> None:
        self._api.stop()
        self._logs.stop()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self.check()

    def check(self) -> None:
        """Raise FakeGitHubError if the fake sent an off-spec response or crashed."""
        self.problems.raise_if_any()

    # ---- conveniences over State ------------------------------------------------------------

    def install(self, account: str, *, repos: Sequence[Repo] | None = None) -> Installation:
        """Install the App on `account` (all its repositories, or only `repos`)."""
        return self.state.install_app(self.app, account, repos=repos)

    def sign_in(self, login: str | None) -> None:
        """The user whose browser is signed in to GitHub (None: nobody): the OAuth authorize
        page hands the App a code for them at once."""
        with self.state.lock:
            if login is not None:
                self.state.user(login)
            self.state.signed_in = login

    @property
    def client_id(self) -> str:
        """The App's OAuth client id (GITHUB_CLIENT_ID)."""
        return self.app.client_id

    @property
    def client_secret(self) -> str:
        """The App's OAuth client secret (GITHUB_CLIENT_SECRET)."""
        return self.app.client_secret

    def token_for(self, installation: Installation) -> str:
        """An installation token minted directly, for tests that skip the JWT exchange."""
        return self.state.issue_token(installation).value

    def requests(
        self, path_pattern: str = "", *, method: str | None = None, host: str | None = "api"
    ) -> list[RecordedRequest]:
        return self.state.requests_matching(path_pattern, method=method, host=host)
