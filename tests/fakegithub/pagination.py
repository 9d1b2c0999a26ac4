"""GitHub's page-number pagination: `per_page` (default 30, at most 100), `page`, and a Link
header whose URLs keep the request's other query parameters, with `page` last.

For repository resources GitHub writes the links as /repositories/{id}/..., not
/repos/{owner}/{repo}/...; callers pass that base so clients must follow links verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, urlencode

from .http_types import Request

T = TypeVar("T")
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    link: str | None  # the Link header value, None when everything fits on one page

    def headers(self) -> list[tuple[str, str]]:
        return [("Link", self.link)] if self.link else []


def paginate(items: Sequence[T], request: Request, link_base: str) -> Page[T]:
    per_page = min(_int(request.query("per_page"), DEFAULT_PER_PAGE), MAX_PER_PAGE)
    page = _int(request.query("page"), 1)
    start = (page - 1) * per_page
    last = max(1, -(-len(items) // per_page))
    return Page(list(items[start : start + per_page]), _link(request, link_base, page, last))


def _int(text: str | None, default: int) -> int:
    try:
        value = int(text) if text is not None else default
    except ValueError:
        return default  # GitHub ignores a malformed number rather than failing
    return value if value >= 1 else default


def _link(request: Request, base: str, page: int, last: int) -> str | None:
    if last == 1:
        return None
    kept = [(k, v) for k, v in parse_qsl(request.raw_query, keep_blank_values=True) if k != "page"]

    def url(number: int) -> str:
        return f"{base}?{urlencode([*kept, ('page', str(number))])}"

    relations: list[tuple[str, int]] = []
    if page > 1:
        relations.append(("prev", min(page - 1, last)))
    if page < last:
        relations += [("next", page + 1), ("last", last)]
    if page > 1:
        relations.append(("first", 1))
    return ", ".join(f'<{url(number)}>; rel="{rel}"' for rel, number in relations)
