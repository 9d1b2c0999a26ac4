"""Issue (and pull request) comments: list, create, read, edit, and react to."""

from __future__ import annotations

import datetime as dt

from ..http_types import HttpError, Response, json_response
from ..models import Comment, Reaction, Repo
from ..pagination import paginate
from ..payloads.issues import REACTION_KINDS, comment_payload, reaction_payload
from ..routing import Route, RouteContext

MAX_BODY_CHARACTERS = 65536
# Pull request comments are issue comments: either permission lets an App write them.
READ = (("issues", "read"), ("pull_requests", "read"))
WRITE = (("issues", "write"), ("pull_requests", "write"))
_ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
_COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
_REACTIONS = f"{_COMMENT}/reactions"


def _comment_json(ctx: RouteContext, comment: Comment, repo: Repo) -> dict[str, object]:
    app = ctx.state.apps.get(comment.app_id) if comment.app_id else None
    association = ctx.association(repo, comment.author)
    return comment_payload(ctx.urls, comment, repo, association, app)


def _issue_number(ctx: RouteContext, repo: Repo) -> int:
    number = ctx.int_param("issue_number")
    if (repo.id, number) not in ctx.state.pulls:
        raise HttpError(404, "Not Found")
    return number


def _body(ctx: RouteContext) -> str:
    body = ctx.json_body().get("body")
    if not isinstance(body, str):
        raise HttpError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    if len(body) > MAX_BODY_CHARACTERS:
        raise HttpError(
            422,
            "Validation Failed",
            errors=[
                {
                    "resource": "IssueComment",
                    "code": "custom",
                    "field": "body",
                    "message": f"body is too long (maximum is {MAX_BODY_CHARACTERS} characters)",
                }
            ],
        )
    return body


def _since(ctx: RouteContext) -> dt.datetime | None:
    text = ctx.request.query("since")
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise HttpError(422, "Invalid request.\n\nInvalid value for `since`.") from None


def list_comments(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        number = _issue_number(ctx, repo)
        since = _since(ctx)
        comments = [
            c for c in ctx.state.comments_on(repo, number) if since is None or c.updated_at >= since
        ]
        link_base = ctx.urls.repo_link_base(repo, f"issues/{number}/comments")
        page = paginate(comments, ctx.request, link_base)
        payload = [_comment_json(ctx, comment, repo) for comment in page.items]
        return json_response(200, payload, page.headers())


def create_comment(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        number = _issue_number(ctx, repo)
        bot = ctx.installation_caller().app.bot
        comment = ctx.state.add_comment(repo, number, bot, _body(ctx))
        payload = _comment_json(ctx, comment, repo)
        return json_response(201, payload, [("Location", str(payload["url"]))])


def _comment(ctx: RouteContext, repo: Repo) -> Comment:
    comment = ctx.state.comments.get(ctx.int_param("comment_id"))
    if comment is None or comment.repo_id != repo.id:
        raise HttpError(404, "Not Found")
    return comment


def get_comment(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        return json_response(200, _comment_json(ctx, _comment(ctx, repo), repo))


def edit_comment(ctx: RouteContext) -> Response:
    with ctx.state.lock:
        repo = ctx.repo()
        comment = _comment(ctx, repo)
        comment.body = _body(ctx)
        comment.updated_at = ctx.state.now()
        return json_response(200, _comment_json(ctx, comment, repo))


def create_reaction(ctx: RouteContext) -> Response:
    """201 with the new reaction; 200 with the one there when the caller reacted so before."""
    with ctx.state.lock:
        repo = ctx.repo()
        comment = _comment(ctx, repo)
        content = ctx.json_body().get("content")
        if content not in REACTION_KINDS:
            raise HttpError(
                422,
                "Validation Failed",
                errors=[{"resource": "Reaction", "code": "invalid", "field": "content"}],
            )
        bot = ctx.installation_caller().app.bot
        mine = [r for r in comment.reactions if r.user.id == bot.id and r.content == content]
        if mine:
            return json_response(200, reaction_payload(ctx.urls, mine[0]))
        made = Reaction(ctx.state.next_id("reaction"), str(content), bot, ctx.state.now())
        comment.reactions.append(made)
        return json_response(201, reaction_payload(ctx.urls, made))


ROUTES = [
    Route("GET", _ISSUE, list_comments, permissions=READ),
    Route("POST", _ISSUE, create_comment, permissions=WRITE),
    Route("GET", _COMMENT, get_comment, permissions=READ),
    Route("PATCH", _COMMENT, edit_comment, permissions=WRITE),
    Route("POST", _REACTIONS, create_reaction, permissions=WRITE),
]
