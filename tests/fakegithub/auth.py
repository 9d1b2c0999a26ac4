"""Who is calling: an App (RS256 JWT), an installation (a `ghs_` token), a user through an
App (a `ghu_` user access token), or nobody (401; the web host's OAuth pages take anyone).

The JWT rules and messages are GitHub's: `iss` is the App id (or its client id), `iat` may be
at most a minute in the future (clock drift), `exp` must be ahead and at most ten minutes away.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jwt
from jwt.types import Options

from .http_types import HttpError, Request
from .models import App, Installation, Token, User, UserToken
from .state import State

MAX_JWT_LIFETIME = 600
CLOCK_DRIFT = 60
BAD_CREDENTIALS = "Bad credentials"
UNDECODABLE_JWT = "A JSON web token could not be decoded"
_LEVELS = {"read": 1, "write": 2, "admin": 3}


@dataclass(frozen=True)
class AppCaller:
    app: App

    @property
    def rate_key(self) -> str:
        return f"app:{self.app.id}"


@dataclass(frozen=True)
class InstallationCaller:
    app: App
    installation: Installation
    token: Token

    @property
    def rate_key(self) -> str:
        return f"installation:{self.installation.id}"


@dataclass(frozen=True)
class UserCaller:
    app: App
    user: User
    token: UserToken

    @property
    def rate_key(self) -> str:
        return f"user:{self.user.id}"


@dataclass(frozen=True)
class AnonymousCaller:
    """A browser on the web host (the OAuth pages), or a client before it has credentials."""

    @property
    def rate_key(self) -> str:
        return "anonymous"


Caller = AppCaller | InstallationCaller | UserCaller | AnonymousCaller


def credentials(request: Request) -> str | None:
    """The secret after `token ` or `Bearer ` (GitHub accepts both schemes)."""
    header = request.header("Authorization")
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    return secret.strip() if scheme.lower() in ("token", "bearer") and secret.strip() else None


def authenticate_app(state: State, request: Request, now: float | None = None) -> AppCaller:
    secret = credentials(request)
    if secret is None:
        raise HttpError(401, UNDECODABLE_JWT)
    try:
        claims = jwt.decode(secret, options={"verify_signature": False})
        header = jwt.get_unverified_header(secret)
    except jwt.PyJWTError:
        raise HttpError(401, UNDECODABLE_JWT) from None
    app = _app_named_by(state, claims.get("iss"))
    if header.get("alg") != "RS256" or app is None:
        raise HttpError(401, UNDECODABLE_JWT)
    try:
        jwt.decode(secret, app.public_key_pem, algorithms=["RS256"], options=_NO_CLAIM_CHECKS)
    except jwt.PyJWTError:
        raise HttpError(401, UNDECODABLE_JWT) from None
    _check_times(claims, time.time() if now is None else now)
    return AppCaller(app)


# PyJWT checks the signature only; the timing rules are GitHub's, checked in _check_times.
_NO_CLAIM_CHECKS: Options = {"verify_exp": False, "verify_iat": False, "verify_nbf": False}


def _app_named_by(state: State, issuer: object) -> App | None:
    with state.lock:
        for app in state.apps.values():
            if str(issuer) in (str(app.id), app.client_id):
                return app
    return None


def _check_times(claims: dict[str, object], now: float) -> None:
    issued, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(issued, int) or issued > now + CLOCK_DRIFT:
        raise HttpError(
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the "
            "assertion was issued",
        )
    if not isinstance(expires, int) or expires <= now:
        raise HttpError(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future "
            "time at which the assertion expires",
        )
    if expires > now + MAX_JWT_LIFETIME:
        raise HttpError(401, "'Expiration time' claim ('exp') is too far in the future")


def authenticate_installation(state: State, request: Request) -> InstallationCaller:
    secret = credentials(request)
    with state.lock:
        token = state.tokens.get(secret or "")
        if token is None or token.expires_at <= state.now():
            raise HttpError(401, BAD_CREDENTIALS)
        installation = state.installations[token.installation_id]
        return InstallationCaller(state.apps[installation.app_id], installation, token)


def authenticate_user(state: State, request: Request) -> UserCaller:
    secret = credentials(request)
    with state.lock:
        token = state.user_tokens.get(secret or "")
        if token is None or token.expires_at <= state.now():
            raise HttpError(401, BAD_CREDENTIALS)
        return UserCaller(state.apps[token.app_id], state.users[token.login], token)


def has_permission(granted: dict[str, str], wanted: tuple[tuple[str, str], ...]) -> bool:
    """True when any one (name, level) of `wanted` is granted, or nothing is wanted."""
    if not wanted:
        return True
    return any(_LEVELS.get(granted.get(name, ""), 0) >= _LEVELS[level] for name, level in wanted)
