"""Settings from the environment, read by one function that takes the environment as an argument.

The names are probot's where probot has one (APP_ID, PRIVATE_KEY, PRIVATE_KEY_PATH,
WEBHOOK_SECRET, GITHUB_API_URL, PORT, LOG_LEVEL, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET); the
rest are ours. The dashboard is served only with the App's OAuth client (both of its
settings). An empty value counts as unset, so a `.env` line like `REDIS_URL=` means "no Redis"
rather than "a Redis at ''".

`load_settings` checks the form of every value; which values must be present depends on the
command, so that is checked by `Settings.require(role)`: `triage-bot serve` needs the webhook
secret and credentials, `triage-bot serve --no-worker` only the secret, `triage-bot worker` only
the credentials. Every error is a `SettingsError` whose text is one line naming the setting.

The default data directory is `$XDG_DATA_HOME/triage-bot` (`~/.local/share/triage-bot`): it is
the same wherever the command is started from, so `serve` and a later `worker` on one machine
find the same SQLite files. Containers set TRIAGE_DATA_DIR to a mounted volume.

`environment()` is what the commands pass: the process environment over a `.env` file in the
working directory (python-dotenv reads it), so a variable set in the environment wins.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from dotenv import dotenv_values

Role = Literal["server", "worker", "cli"]

DEFAULT_GITHUB_API_URL = "https://api.github.com"
# github.com's web host: the dashboard's sign-in (OAuth authorize, access_token) happens there.
DEFAULT_GITHUB_WEB_URL = "https://github.com"
# A DASHBOARD_SESSION_KEY shorter than this is refused: it signs the dashboard's cookie.
MIN_SESSION_KEY_LENGTH = 32
DEFAULT_PORT = 8000
DEFAULT_MAX_LOG_BYTES = 256 * 1024 * 1024
# Outages (GitHub's 5xx, timeouts, a failing log host): the queue tries a job again, waiting
# longer each time, for this long after the job was queued; then it records it failed.
DEFAULT_OUTAGE_RETRY_HOURS = 6.0
DEFAULT_OUTAGE_BACKOFF = 30.0  # seconds: the first wait; then about as long as waited so far
DEFAULT_OUTAGE_BACKOFF_MAX = 1800.0  # seconds: the longest single wait
# Inside one attempt, each request to GitHub is retried with these pauses (doubling).
DEFAULT_GITHUB_BACKOFF = 1.0
DEFAULT_GITHUB_BACKOFF_MAX = 30.0
# Comparing with a passing run (triage/reference.py): how long a triage waits for the passing
# logs before classifying without them, and the disk its cache of passing logs may take.
DEFAULT_COMPARE_TIMEOUT = 60.0  # seconds
DEFAULT_COMPARE_CACHE_BYTES = 1024 * 1024 * 1024
# How long the outcome of each triaged job is kept (store/job_outcomes.py); the worker prunes
# older ones (TRIAGE_HISTORY_DAYS).
DEFAULT_HISTORY_DAYS = 90.0
# Where the comment's "how signatures work" and "Add a signature" links go (TRIAGE_CATALOG_URL):
# the same as core/render.CATALOG_URL, which config may not import (tests/test_config.py checks).
DEFAULT_CATALOG_URL = "https://github.com/triage-bot/triage-bot/blob/main/patterns/README.md"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_SIZE = re.compile(r"(?P<number>\d+)\s*(?P<unit>[kmg]i?b?|b)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


class SettingsError(ValueError):
    """A missing or malformed setting; str(error) is one line that starts with its name."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name


@dataclass(frozen=True)
class Settings:
    app_id: int | None = None
    private_key: str | None = None
    webhook_secret: str | None = None
    github_api_url: str = DEFAULT_GITHUB_API_URL
    database_url: str = ""
    redis_url: str | None = None
    data_dir: Path = Path(".")
    port: int = DEFAULT_PORT
    log_level: str = "INFO"
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    github_token: str | None = None
    outage_retry_hours: float = DEFAULT_OUTAGE_RETRY_HOURS
    outage_backoff: float = DEFAULT_OUTAGE_BACKOFF
    outage_backoff_max: float = DEFAULT_OUTAGE_BACKOFF_MAX
    github_backoff: float = DEFAULT_GITHUB_BACKOFF
    github_backoff_max: float = DEFAULT_GITHUB_BACKOFF_MAX
    compare_timeout: float = DEFAULT_COMPARE_TIMEOUT
    compare_cache_bytes: int = DEFAULT_COMPARE_CACHE_BYTES
    catalog_url: str = DEFAULT_CATALOG_URL
    history_days: float = DEFAULT_HISTORY_DAYS
    github_web_url: str = DEFAULT_GITHUB_WEB_URL
    github_client_id: str | None = None
    github_client_secret: str | None = None
    dashboard_session_key: str | None = None  # DASHBOARD_SESSION_KEY as set; see session_key

    @property
    def has_app_credentials(self) -> bool:
        return self.app_id is not None and self.private_key is not None

    @property
    def dashboard_enabled(self) -> bool:
        """The dashboard and its sign-in are served only with the App's OAuth client."""
        return self.github_client_id is not None and self.github_client_secret is not None

    @property
    def session_key(self) -> bytes:
        """What signs the dashboard's session cookie: DASHBOARD_SESSION_KEY, else a key derived
        from the client secret (so rotating the secret also signs everyone out)."""
        if self.dashboard_session_key is not None:
            return self.dashboard_session_key.encode("utf-8")
        if self.github_client_secret is None:
            raise SettingsError("GITHUB_CLIENT_SECRET", "required for the dashboard's sessions")
        secret = self.github_client_secret.encode("utf-8")
        return hmac.new(secret, b"triage-bot dashboard session key", hashlib.sha256).digest()

    @property
    def queue_path(self) -> Path:
        """The embedded queue's SQLite file, used when REDIS_URL is unset."""
        return self.data_dir / "queue.db"

    def require(self, *roles: Role) -> Settings:
        """Check that what `roles` need is present; return self so calls can chain.

        server: WEBHOOK_SECRET. worker: the App's credentials (APP_ID and a private key) or,
        for a single-repository install, GITHUB_TOKEN. cli: the same as worker.
        """
        for role in roles:
            if role == "server" and not self.webhook_secret:
                raise SettingsError(
                    "WEBHOOK_SECRET", "required to serve webhooks (the secret set on the App)"
                )
            if role in ("worker", "cli"):
                self._require_credentials(role)
        return self

    def _require_credentials(self, role: Role) -> None:
        if self.has_app_credentials or self.github_token:
            return
        if self.app_id is not None:
            raise SettingsError("PRIVATE_KEY", "required with APP_ID (or set PRIVATE_KEY_PATH)")
        if self.private_key is not None:
            raise SettingsError("APP_ID", "required with PRIVATE_KEY")
        who = "the worker" if role == "worker" else "this command"
        raise SettingsError(
            "APP_ID",
            f"{who} needs GitHub credentials: APP_ID with PRIVATE_KEY (or PRIVATE_KEY_PATH), "
            "or GITHUB_TOKEN",
        )


def environment() -> dict[str, str]:
    """The process environment over the values of `.env` in the working directory: a variable
    set in the environment wins, as python-dotenv's `load_dotenv` does, without changing
    `os.environ` for the rest of the process."""
    from_file = dotenv_values(".env") if Path(".env").is_file() else {}
    return {**{k: v for k, v in from_file.items() if v is not None}, **os.environ}


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Read and check every setting; raise SettingsError on the first bad one."""
    env = {key: value.strip() for key, value in environ.items() if value.strip()}
    data_dir = _data_dir(env)
    return Settings(
        app_id=_whole_number(env, "APP_ID"),
        private_key=_private_key(env),
        webhook_secret=env.get("WEBHOOK_SECRET"),
        github_api_url=_http_url(env, "GITHUB_API_URL", DEFAULT_GITHUB_API_URL),
        database_url=_database_url(env, data_dir),
        redis_url=_redis_url(env),
        data_dir=data_dir,
        port=_whole_number(env, "PORT", maximum=65535) or DEFAULT_PORT,
        log_level=_log_level(env),
        max_log_bytes=_size(env, "TRIAGE_MAX_LOG_BYTES", DEFAULT_MAX_LOG_BYTES),
        github_token=env.get("GITHUB_TOKEN"),
        outage_retry_hours=_positive(env, "TRIAGE_OUTAGE_RETRY_HOURS", DEFAULT_OUTAGE_RETRY_HOURS),
        outage_backoff=_positive(env, "TRIAGE_OUTAGE_BACKOFF", DEFAULT_OUTAGE_BACKOFF),
        outage_backoff_max=_positive(env, "TRIAGE_OUTAGE_BACKOFF_MAX", DEFAULT_OUTAGE_BACKOFF_MAX),
        github_backoff=_positive(env, "TRIAGE_GITHUB_BACKOFF", DEFAULT_GITHUB_BACKOFF),
        github_backoff_max=_positive(env, "TRIAGE_GITHUB_BACKOFF_MAX", DEFAULT_GITHUB_BACKOFF_MAX),
        compare_timeout=_positive(env, "TRIAGE_COMPARE_TIMEOUT", DEFAULT_COMPARE_TIMEOUT),
        compare_cache_bytes=_size(env, "TRIAGE_COMPARE_CACHE_BYTES", DEFAULT_COMPARE_CACHE_BYTES),
        catalog_url=_http_url(env, "TRIAGE_CATALOG_URL", DEFAULT_CATALOG_URL),
        history_days=_positive(env, "TRIAGE_HISTORY_DAYS", DEFAULT_HISTORY_DAYS),
        github_web_url=_web_url(env),
        **_oauth_client(env),
    )


def configure_logging(level: str) -> None:
    """Log to stderr at LOG_LEVEL, unless the embedding program configured logging already."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def normalize_database_url(url: str) -> str:
    """Use the psycopg 3 driver for PostgreSQL, whatever spelling the URL came in.

    Heroku-style `postgres://` and plain `postgresql://` would otherwise make SQLAlchemy look
    for psycopg2, which we do not install.
    """
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _whole_number(env: Mapping[str, str], name: str, maximum: int | None = None) -> int | None:
    """A whole number from 1 (to `maximum`), or None when unset."""
    raw = env.get(name)
    if raw is None:
        return None
    if not raw.isdigit():
        raise SettingsError(name, f"must be a whole number, got {raw!r}")
    value = int(raw)
    if value < 1:
        raise SettingsError(name, f"must be at least 1, got {value}")
    if maximum is not None and value > maximum:
        raise SettingsError(name, f"must be at most {maximum}, got {value}")
    return value


def _log_level(env: Mapping[str, str]) -> str:
    level = env.get("LOG_LEVEL", "INFO").upper()
    if level not in LOG_LEVELS:
        raise SettingsError("LOG_LEVEL", f"must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return level


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number (fractions allowed, so tests can shrink hours to seconds)."""
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(name, f"must be a number, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise SettingsError(name, f"must be a positive number, got {raw!r}")
    return value


def parse_size(raw: str) -> int | None:
    """`268435456`, `256MiB`, `500k`, `2GB` -> bytes (k, M and G count 1024s), or None."""
    match = _SIZE.fullmatch(raw.strip())
    if match is None:
        return None
    unit = (match["unit"] or "").lower()[:1]
    return int(match["number"]) * _UNITS[unit]


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    value = parse_size(raw)
    if value is None:
        raise SettingsError(
            name, f"must be a number of bytes like 268435456 or 256MiB, got {raw!r}"
        )
    if value < 1:
        raise SettingsError(name, f"must be at least 1 byte, got {raw!r}")
    return value


def _private_key(env: Mapping[str, str]) -> str | None:
    text, path = env.get("PRIVATE_KEY"), env.get("PRIVATE_KEY_PATH")
    if text is not None and path is not None:
        raise SettingsError("PRIVATE_KEY_PATH", "set only one of PRIVATE_KEY and PRIVATE_KEY_PATH")
    if path is not None:
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise SettingsError("PRIVATE_KEY_PATH", f"cannot read {path}: {why}") from None
        return _pem(text, "PRIVATE_KEY_PATH")
    return None if text is None else _pem(text, "PRIVATE_KEY")


def _pem(text: str, name: str) -> str:
    # Environments often carry a PEM on one line with literal "\n" escapes (probot accepts
    # that, and so do we); probot also accepts the PEM base64-encoded as a whole.
    text = text.strip().replace("\\n", "\n")
    if not _PEM_BEGIN.search(text):
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # not base64: said below
            text = base64.b64decode(text, validate=True).decode("utf-8").strip()
    if not _PEM_BEGIN.search(text) or "-----END" not in text:
        raise SettingsError(
            name, "not a PEM private key (expected -----BEGIN ... PRIVATE KEY-----)"
        )
    return text + "\n"


def _http_url(env: Mapping[str, str], name: str, default: str) -> str:
    url = env.get(name, default)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(name, f"must be an http(s) URL, got {url!r}")
    return url.rstrip("/")


def _web_url(env: Mapping[str, str]) -> str:
    """GITHUB_WEB_URL, else from GITHUB_API_URL: api.github.com -> github.com, a GitHub
    Enterprise Server's https://HOST/api/v3 -> https://HOST, any other URL itself."""
    if "GITHUB_WEB_URL" in env:
        return _http_url(env, "GITHUB_WEB_URL", DEFAULT_GITHUB_WEB_URL)
    api = _http_url(env, "GITHUB_API_URL", DEFAULT_GITHUB_API_URL)
    if api == DEFAULT_GITHUB_API_URL:
        return DEFAULT_GITHUB_WEB_URL
    return api.removesuffix("/api/v3")


def _oauth_client(env: Mapping[str, str]) -> dict[str, str | None]:
    """The App's OAuth client (the dashboard's sign-in): both or neither, and the session key."""
    client_id, secret = env.get("GITHUB_CLIENT_ID"), env.get("GITHUB_CLIENT_SECRET")
    if client_id is not None and secret is None:
        raise SettingsError(
            "GITHUB_CLIENT_SECRET", "required with GITHUB_CLIENT_ID (the dashboard's sign-in)"
        )
    if secret is not None and client_id is None:
        raise SettingsError(
            "GITHUB_CLIENT_ID", "required with GITHUB_CLIENT_SECRET (the dashboard's sign-in)"
        )
    key = env.get("DASHBOARD_SESSION_KEY")
    if key is not None and len(key) < MIN_SESSION_KEY_LENGTH:
        raise SettingsError(
            "DASHBOARD_SESSION_KEY",
            f"must be at least {MIN_SESSION_KEY_LENGTH} characters (it signs the session cookie),"
            f" got {len(key)}",
        )
    return {
        "github_client_id": client_id,
        "github_client_secret": secret,
        "dashboard_session_key": key,
    }


def _data_dir(env: Mapping[str, str]) -> Path:
    raw = env.get("TRIAGE_DATA_DIR")
    if raw is not None:
        return Path(raw).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path(env.get("HOME", "~")) / ".local" / "share"
    return (base / "triage-bot").expanduser()


def _database_url(env: Mapping[str, str], data_dir: Path) -> str:
    url = env.get("DATABASE_URL")
    if url is None:
        return f"sqlite:///{data_dir / 'triage.db'}"
    url = normalize_database_url(url)
    scheme = url.split(":", 1)[0]
    if scheme not in ("sqlite", "sqlite+pysqlite", "postgresql+psycopg"):
        raise SettingsError(
            "DATABASE_URL",
            f"unsupported database {scheme!r} (use sqlite:///PATH or postgresql://...)",
        )
    return url


def _redis_url(env: Mapping[str, str]) -> str | None:
    url = env.get("REDIS_URL")
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise SettingsError(
            "REDIS_URL", f"must be a redis://, rediss:// or unix:// URL, got {url!r}"
        )
    if parts.scheme != "unix" and not parts.hostname:
        raise SettingsError("REDIS_URL", f"has no host: {url!r}")
    return url
