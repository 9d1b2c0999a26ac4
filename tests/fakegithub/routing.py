"""Routes (method + OpenAPI path template) and what a handler gets to work with."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from .auth import Caller, InstallationCaller
from .http_types import HttpError, JsonObject, Request, Response
from .loglinks import LogLinks
from .models import Repo, User
from .payloads.core import Urls
from .ratelimit import Quota
from .state import State

Handler = Callable[["RouteContext"], Response]
Permissions = tuple[tuple[str, str], ...]  # any one (name, level) suffices


@dataclass(frozen=True)
class Route:
    method: str
    template: str  # exactly the OpenAPI path key, so the validator finds the operation
    handler: Handler
    auth: Literal["jwt", "installation", "user", "none"] = "installation"
    permissions: Permissions = ()
    in_subset: bool = True  # False: not in the OpenAPI subset, shaped after GitHub's docs
    counted: bool = True  # False: GitHub does not count it against the rate limit
    docs: str = "https://docs.github.com/rest"  # used for routes outside the subset


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    pattern = pattern.replace("(?P<path>[^/]+)", "(?P<path>.+)")  # contents paths span segments
    return re.compile(f"^{pattern}$")


class Router:
    def __init__(self, routes: Iterable[Route]) -> None:
        self._routes = [(route, _template_regex(route.template)) for route in routes]

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route, regex in self._routes:
            found = regex.match(path)
            if found and route.method == method:
                return route, {k: unquote(v) for k, v in found.groupdict().items()}
        return None


@dataclass
class RouteContext:
    request: Request
    params: dict[str, str]
    caller: Caller
    state: State
    urls: Urls
    log_links: LogLinks
    quota: Quota  # the caller's rate limit after this request

    def repo(self) -> Repo:
        """The path's repository; 404 (as GitHub answers) when the caller may not see it."""
        repo = self.state.repo_by_name(self.params["owner"], self.params["repo"])
        if repo is None or not self._can_see(repo):
            raise HttpError(404, "Not Found")
        return repo

    def _can_see(self, repo: Repo) -> bool:
        if not isinstance(self.caller, InstallationCaller):
            return True  # an App JWT only reaches the /installation look-up
        allowed = self.state.installation_repos(self.caller.installation)
        narrowed = self.caller.token.repo_ids
        return repo in allowed and (narrowed is None or repo.id in narrowed)

    def int_param(self, name: str) -> int:
        text = self.params[name]
        if not text.isdigit():
            raise HttpError(404, "Not Found")
        return int(text)

    def json_body(self) -> JsonObject:
        if not self.request.body.strip():
            return {}
        try:
            value = json.loads(self.request.body)
        except ValueError:
            raise HttpError(400, "Problems parsing JSON") from None
        if not isinstance(value, dict):
            raise HttpError(400, "Problems parsing JSON")
        return value

    def association(self, repo: Repo, user: User) -> str:
        """author_association: OWNER, COLLABORATOR (any role), else NONE."""
        if user.id == repo.owner.id:
            return "OWNER"
        return "COLLABORATOR" if (repo.id, user.login) in self.state.roles else "NONE"

    def installation_caller(self) -> InstallationCaller:
        assert isinstance(self.caller, InstallationCaller)  # guaranteed by the route's auth
        return self.caller
