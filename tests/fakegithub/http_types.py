"""The request and response values passed between the HTTP layer and the fake's handlers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

JsonObject = dict[str, Any]
JSON_CONTENT_TYPE = "application/json; charset=utf-8"


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without the query string, still percent-encoded
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    def query(self, name: str) -> str | None:
        values = parse_qs(self.raw_query, keep_blank_values=True).get(name)
        return values[-1] if values else None


@dataclass(frozen=True)
class Trickle:
    """Send the body `chunk_size` bytes at a time with `pause` seconds between pieces."""

    chunk_size: int
    pause: float


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    payload: Any = None  # the JSON value `body` encodes, kept for validation
    is_json: bool = False
    trickle: Trickle | None = None

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    def set_header(self, name: str, value: str) -> None:
        wanted = name.lower()
        self.headers = [(k, v) for k, v in self.headers if k.lower() != wanted]
        self.headers.append((name, value))


def json_response(
    status: int, payload: Any, headers: list[tuple[str, str]] | None = None
) -> Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    all_headers = [("Content-Type", JSON_CONTENT_TYPE), *(headers or [])]
    return Response(status, all_headers, body, payload=payload, is_json=True)


class HttpError(Exception):
    """Raised by handlers to answer with GitHub's error body instead of a payload."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[JsonObject] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.headers = headers or []

    def to_response(self, documentation_url: str) -> Response:
        payload: JsonObject = {"message": self.message, "documentation_url": documentation_url}
        if self.errors is not None:
            payload["errors"] = self.errors
        payload["status"] = str(self.status)  # GitHub now echoes the status as a string
        return json_response(self.status, payload, self.headers)
