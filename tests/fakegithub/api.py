"""The API host: log, delay, route, fault, authenticate, rate-limit, handle, validate.

Every response leaves with GitHub's usual headers; every response of an operation in the
OpenAPI subset is checked against it, and a mismatch becomes a 500 plus a recorded problem.
"""

from __future__ import annotations

import secrets
import threading
import time
import traceback
from dataclasses import replace

from .auth import (
    AnonymousCaller,
    Caller,
    InstallationCaller,
    authenticate_app,
    authenticate_installation,
    authenticate_user,
    has_permission,
)
from .faults import Faults, InjectedError
from .http_types import HttpError, Request, Response, json_response
from .loglinks import LogLinks
from .models import RecordedRequest
from .openapi import OpenApiSpec
from .payloads.core import Urls
from .problems import Problems
from .ratelimit import (
    ANONYMOUS_LIMIT,
    INSTALLATION_LIMIT,
    Quota,
    RateLimiter,
    RateLimitExceeded,
)
from .routes import all_routes
from .routing import Route, RouteContext, Router
from .state import State

RATE_LIMIT_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-rate-limits"
)
NOT_ACCESSIBLE = "Resource not accessible by integration"


def new_request_id() -> str:
    parts = (secrets.token_hex(n).upper() for n in (2, 3, 4, 4, 4))
    return ":".join(parts)


class ApiApp:
    def __init__(
        self,
        state: State,
        faults: Faults,
        rate_limiter: RateLimiter,
        spec: OpenApiSpec,
        log_links: LogLinks,
        problems: Problems,
        stopping: threading.Event,
    ) -> None:
        self.state, self.faults, self.spec = state, faults, spec
        self.rate_limiter, self.log_links = rate_limiter, log_links
        self.problems, self.stopping = problems, stopping
        self.router = Router(all_routes())
        self.urls = Urls("http://unbound", "http://unbound")  # set once the server listens

    def __call__(self, request: Request) -> Response:
        record = self.state.record(
            RecordedRequest(
                "api",
                request.method,
                request.path,
                request.raw_query,
                request.headers,
                request.body,
                time.time(),
                new_request_id(),
            )
        )
        try:
            response = self._respond(request, record)
        except Exception as exc:  # a bug in the fake: answer 500 and fail the test later
            self.problems.add(f"{request.method} {request.path} crashed:\n{traceback.format_exc()}")
            response = json_response(500, {"message": f"fake GitHub crashed: {exc!r}"})
        response.set_header("x-github-request-id", record.request_id)
        response.set_header("x-github-api-version-selected", "2022-11-28")
        response.set_header("x-github-media-type", "github.v3; format=json")
        record.status = response.status
        return response

    def _respond(self, request: Request, record: RecordedRequest) -> Response:
        delay = self.faults.take_delay("api", request.method, request.path)
        if delay:
            record.notes.append(f"fault: delayed {delay}s")
            self.stopping.wait(delay)
        canonical = replace(request, path=self._canonical_path(request.path))
        matched = self.router.match(canonical.method, canonical.path)
        if matched is None:
            response = HttpError(404, "Not Found").to_response("https://docs.github.com/rest")
            return self._with_quota(response, self.rate_limiter.peek("anonymous", ANONYMOUS_LIMIT))
        route, params = matched
        injected = self.faults.take_error("api", canonical.method, canonical.path)
        if injected is not None:
            record.notes.append(f"fault: {injected.status}")
            response, quota = self._injected(injected, record), self._peek(canonical)
        else:
            response, quota = self._handle(route, params, canonical)
        response = self._with_quota(response, quota)
        return self._validated(route, response) if route.in_subset else response

    def _handle(
        self, route: Route, params: dict[str, str], request: Request
    ) -> tuple[Response, Quota]:
        docs = self._docs(route)
        quota = self.rate_limiter.peek("anonymous", ANONYMOUS_LIMIT)
        try:
            caller = self._authenticate(route, request)
            quota = self._count(route, caller)
            self._authorize(route, caller)
            self._check_request_body(route, request)
            ctx = RouteContext(
                request, params, caller, self.state, self.urls, self.log_links, quota
            )
            return route.handler(ctx), quota
        except RateLimitExceeded as exceeded:
            message = f"API rate limit exceeded for {self._who(request)}."
            return HttpError(403, message).to_response(RATE_LIMIT_DOCS), exceeded.quota
        except HttpError as error:
            return error.to_response(docs), quota

    def _authenticate(self, route: Route, request: Request) -> Caller:
        if route.auth == "jwt":
            return authenticate_app(self.state, request)
        if route.auth == "user":
            return authenticate_user(self.state, request)
        if route.auth == "none":
            return AnonymousCaller()
        return authenticate_installation(self.state, request)

    def _count(self, route: Route, caller: Caller) -> Quota:
        if not route.counted:
            return self.rate_limiter.peek(caller.rate_key, INSTALLATION_LIMIT)
        return self.rate_limiter.consume(caller.rate_key, INSTALLATION_LIMIT)

    @staticmethod
    def _authorize(route: Route, caller: Caller) -> None:
        """An installation token carries permissions; an App JWT needs none on its routes."""
        if isinstance(caller, InstallationCaller) and not has_permission(
            caller.token.permissions, route.permissions
        ):
            raise HttpError(403, NOT_ACCESSIBLE)

    def _check_request_body(self, route: Route, request: Request) -> None:
        if not route.in_subset or not request.body:
            return
        problems = self.spec.request_problems(route.method, route.template, request.body)
        if problems == ["Problems parsing JSON"]:
            raise HttpError(400, "Problems parsing JSON")
        if problems:
            raise HttpError(422, "Invalid request.\n\n" + "\n".join(problems))

    def _validated(self, route: Route, response: Response) -> Response:
        problems = self.spec.response_problems(route.method, route.template, response)
        if not problems:
            return response
        summary = f"{route.method} {route.template} -> {response.status}: " + "; ".join(problems)
        self.problems.add(f"response failed OpenAPI validation: {summary}")
        failed = json_response(500, {"message": f"fake GitHub sent an invalid response: {summary}"})
        failed.headers.extend(h for h in response.headers if h[0].startswith("x-ratelimit"))
        return failed

    def _injected(self, injected: InjectedError, record: RecordedRequest) -> Response:
        message = injected.message.replace("{request_id}", record.request_id)
        response = HttpError(injected.status, message).to_response(injected.documentation_url)
        response.headers.extend(injected.headers)
        return response

    def _peek(self, request: Request) -> Quota:
        """The quota headers of a request answered by a fault (which does not count it)."""
        try:
            caller: Caller = authenticate_installation(self.state, request)
        except HttpError:
            return self.rate_limiter.peek("anonymous", ANONYMOUS_LIMIT)
        return self.rate_limiter.peek(caller.rate_key, INSTALLATION_LIMIT)

    def _who(self, request: Request) -> str:
        try:
            return (
                f"installation ID {authenticate_installation(self.state, request).installation.id}"
            )
        except HttpError:
            return "this GitHub App"

    def _docs(self, route: Route) -> str:
        return (
            self.spec.documentation_url(route.method, route.template)
            if route.in_subset
            else route.docs
        )

    def _canonical_path(self, path: str) -> str:
        """/repositories/{id}/... (GitHub's Link URL form) -> /repos/{owner}/{repo}/..."""
        if not path.startswith("/repositories/"):
            return path
        _, _, repo_id, *rest = path.split("/", 3)
        repo = self.state.repos.get(int(repo_id)) if repo_id.isdigit() else None
        if repo is None:
            return path
        return "/".join([f"/repos/{repo.full_name}", *rest])

    @staticmethod
    def _with_quota(response: Response, quota: Quota) -> Response:
        for name, value in quota.headers():
            response.set_header(name, value)
        return response
