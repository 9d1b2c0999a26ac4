"""URLs, timestamps, node ids, users and repositories, shaped as GitHub returns them."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from urllib.parse import quote

from ..http_types import JsonObject
from ..models import Repo, User


@dataclass(frozen=True)
class Urls:
    """Where the fake lives. GitHub's API and web hosts differ; here both are the fake's."""

    api: str
    web: str

    def repo_api(self, repo: Repo) -> str:
        return f"{self.api}/repos/{repo.full_name}"

    def repo_web(self, repo: Repo) -> str:
        return f"{self.web}/{repo.full_name}"

    def repo_link_base(self, repo: Repo, rest: str) -> str:
        """The /repositories/{id}/... form GitHub uses in Link headers."""
        return f"{self.api}/repositories/{repo.id}/{rest.lstrip('/')}"


def iso(moment: dt.datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_required(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(kind: str, number: int) -> str:
    """GitHub's legacy global id: base64 of "0<len>:<Type><id>"."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


def user_payload(urls: Urls, user: User) -> JsonObject:
    login = quote(user.login, safe="")  # a bot's "[bot]" suffix is percent-encoded in URLs
    api = f"{urls.api}/users/{login}"
    html = f"{urls.web}/apps/{user.login.removesuffix('[bot]')}" if user.type == "Bot" else None
    return {
        "login": user.login,
        "id": user.id,
        "node_id": node_id(user.type, user.id),
        "avatar_url": f"{urls.web}/avatars/u/{user.id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": html or f"{urls.web}/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": user.type,
        "user_view_type": "public",
        "site_admin": user.site_admin,
    }


# Suffixes of a repository's API URL, per field; "{...}" parts are RFC 6570 templates.
_REPO_URL_FIELDS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def minimal_repo_payload(urls: Urls, repo: Repo) -> JsonObject:
    api = urls.repo_api(repo)
    payload: JsonObject = {
        "id": repo.id,
        "node_id": node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "owner": user_payload(urls, repo.owner),
        "private": repo.private,
        "html_url": urls.repo_web(repo),
        "description": repo.description,
        "fork": repo.fork,
        "url": api,
    }
    payload.update({name: api + suffix for name, suffix in _REPO_URL_FIELDS.items()})
    return payload


def repo_payload(urls: Urls, repo: Repo) -> JsonObject:
    """The full `repository` object (as nested in a pull request's head and base)."""
    host = urls.web.split("://", 1)[-1]
    stamp = iso_required(repo.created_at)
    return {
        **minimal_repo_payload(urls, repo),
        "git_url": f"git://{host}/{repo.full_name}.git",
        "ssh_url": f"git@{host}:{repo.full_name}.git",
        "clone_url": f"{urls.repo_web(repo)}.git",
        "svn_url": urls.repo_web(repo),
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 1024,
        "default_branch": repo.default_branch,
        "open_issues_count": 0,
        "open_issues": 0,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if repo.private else "public",
        "license": None,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "pushed_at": stamp,
        "created_at": stamp,
        "updated_at": stamp,
    }
