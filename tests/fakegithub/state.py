"""Everything the fake GitHub knows, behind one re-entrant lock.

Tests build the world with the `add_*` methods and may then edit the returned records directly
(hold `state.lock` for multi-step edits); the server reads and writes the same objects while
handling requests, always under the lock.
"""

from __future__ import annotations

import datetime as dt
import secrets
import string
from collections.abc import Sequence

from .models import App, Comment, Installation, PullRequest, Repo, Role, Token, User
from .state_actions import ActionsState
from .state_oauth import OAuthState

DEFAULT_APP_PERMISSIONS = {
    "actions": "write",
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
}
TOKEN_LIFETIME = dt.timedelta(hours=1)


class State(OAuthState, ActionsState):
    # ---- users, apps, installations ---------------------------------------------------------

    def add_app(
        self,
        slug: str,
        public_key_pem: bytes,
        *,
        owner: str = "triage-bot-dev",
        permissions: dict[str, str] | None = None,
        events: Sequence[str] = ("workflow_run", "workflow_job", "issue_comment", "pull_request"),
    ) -> App:
        with self.lock:
            app_id = self.next_id("app")
            app = App(
                id=app_id,
                slug=slug,
                name=slug.replace("-", " ").title(),
                owner=self.user(owner, type="Organization"),
                client_id=f"Iv23li{app_id:014d}",
                public_key_pem=public_key_pem,
                bot=self.user(f"{slug}[bot]", type="Bot"),
                permissions=dict(permissions or DEFAULT_APP_PERMISSIONS),
                events=list(events),
                created_at=self.now(),
                client_secret=secrets.token_hex(20),
            )
            self.apps[app.id] = app
            return app

    def install_app(
        self,
        app: App,
        account: str,
        *,
        repos: Sequence[Repo] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> Installation:
        """Install `app` on `account`: on all its repositories, or only on `repos`."""
        with self.lock:
            installation = Installation(
                id=self.next_id("installation"),
                app_id=app.id,
                account=self.user(account, type="Organization"),
                repository_selection="all" if repos is None else "selected",
                repo_ids={repo.id for repo in repos or ()},
                permissions=dict(permissions or app.permissions),
                events=list(app.events),
                created_at=self.now(),
            )
            self.installations[installation.id] = installation
            return installation

    def installation_repos(self, installation: Installation) -> list[Repo]:
        with self.lock:
            if installation.repository_selection == "selected":
                return [self.repos[repo_id] for repo_id in sorted(installation.repo_ids)]
            return [r for r in self.repos.values() if r.owner.id == installation.account.id]

    def installation_for_repo(self, app: App, repo: Repo) -> Installation | None:
        with self.lock:
            for installation in self.installations.values():
                if installation.app_id == app.id and repo in self.installation_repos(installation):
                    return installation
            return None

    def issue_token(
        self,
        installation: Installation,
        *,
        permissions: dict[str, str] | None = None,
        repo_ids: frozenset[int] | None = None,
        lifetime: dt.timedelta = TOKEN_LIFETIME,
    ) -> Token:
        """Mint an installation token directly, without the JWT exchange."""
        alphabet = string.ascii_letters + string.digits
        value = "ghs_" + "".join(secrets.choice(alphabet) for _ in range(36))
        with self.lock:
            token = Token(
                value=value,
                installation_id=installation.id,
                expires_at=self.now() + lifetime,
                permissions=dict(permissions or installation.permissions),
                repo_ids=repo_ids,
            )
            self.tokens[value] = token
            return token

    # ---- repositories and their content ------------------------------------------------------

    def add_repo(
        self,
        full_name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        fork: bool = False,
        description: str | None = None,
    ) -> Repo:
        owner_login, name = full_name.split("/", 1)
        with self.lock:
            owner = self.users.get(owner_login) or self.user(owner_login, type="Organization")
            repo = Repo(
                id=self.next_id("repo"),
                owner=owner,
                name=name,
                private=private,
                default_branch=default_branch,
                fork=fork,
                description=description,
                created_at=self.now(),
            )
            self.repos[repo.id] = repo
            return repo

    def repo_by_name(self, owner: str, name: str) -> Repo | None:
        wanted = f"{owner}/{name}".lower()  # GitHub matches owner and name case-insensitively
        with self.lock:
            return next((r for r in self.repos.values() if r.full_name.lower() == wanted), None)

    def grant(self, repo: Repo, login: str, role: Role) -> User:
        with self.lock:
            user = self.user(login)
            self.roles[(repo.id, user.login)] = role
            return user

    def add_file(
        self, repo: Repo, path: str, content: bytes | str, *, ref: str | None = None
    ) -> None:
        data = content.encode() if isinstance(content, str) else content
        with self.lock:
            self.files.setdefault((repo.id, ref or repo.default_branch), {})[path.strip("/")] = data

    # ---- pull requests ------------------------------------------------------------------------

    def add_pull_request(
        self,
        repo: Repo,
        *,
        number: int | None = None,
        author: str = "contributor",
        head_ref: str = "feature",
        head_sha: str | None = None,
        head_repo: Repo | None = None,
        base_ref: str | None = None,
        title: str = "Add a feature",
        body: str | None = "",
        state: str = "open",
        draft: bool = False,
    ) -> PullRequest:
        with self.lock:
            taken = {n for (repo_id, n) in self.pulls if repo_id == repo.id}
            now = self.now()
            pull = PullRequest(
                id=self.next_id("pull"),
                number=number if number is not None else max(taken, default=0) + 1,
                repo_id=repo.id,
                title=title,
                body=body,
                author=self.user(author),
                head_repo_id=(head_repo or repo).id,
                head_ref=head_ref,
                head_sha=head_sha or self.new_sha(),
                base_ref=base_ref or repo.default_branch,
                base_sha=self.new_sha(),
                state="closed" if state == "closed" else "open",
                draft=draft,
                merged=False,
                created_at=now,
                updated_at=now,
            )
            self.pulls[(repo.id, pull.number)] = pull
            return pull

    # ---- comments ---------------------------------------------------------------------------

    def add_comment(self, repo: Repo, number: int, author: User | str, body: str) -> Comment:
        with self.lock:
            user = author if isinstance(author, User) else self.user(author)
            app = next((a for a in self.apps.values() if a.bot.id == user.id), None)
            now = self.now()
            comment = Comment(
                id=self.next_id("comment"),
                repo_id=repo.id,
                issue_number=number,
                author=user,
                body=body,
                created_at=now,
                updated_at=now,
                app_id=app.id if app else None,
            )
            self.comments[comment.id] = comment
            return comment

    def comments_on(self, repo: Repo, number: int) -> list[Comment]:
        with self.lock:
            found = [
                c
                for c in self.comments.values()
                if (c.repo_id, c.issue_number) == (repo.id, number)
            ]
            return sorted(found, key=lambda comment: comment.id)
