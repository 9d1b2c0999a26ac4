"""The fake GitHub's reactions to an issue comment, through PyGithub as the bot does it, each
answer validated against the vendored OpenAPI subset (tests/github_data)."""

from __future__ import annotations

from fakegithub import FakeGitHub
from fakegithub.fixtures import fake_github
from test_fakegithub import World, api, installation_client, world

__all__ = ["fake_github", "world"]  # fixtures


def test_a_reaction_is_made_once_then_found_and_counted_on_the_comment(
    fake_github: FakeGitHub, world: World
) -> None:
    comment = fake_github.state.add_comment(world.repo, world.pull.number, "alice", "/triage")
    gh = installation_client(fake_github, world.installation)
    issue_comment = (
        gh.get_repo("octo-org/widgets").get_issue(world.pull.number).get_comment(comment.id)
    )
    made = issue_comment.create_reaction("eyes")
    again = issue_comment.create_reaction("eyes")
    assert made.id == again.id and made.content == "eyes"
    assert made.user.login == "triage-bot[bot]"
    posts = fake_github.requests(rf"/issues/comments/{comment.id}/reactions$", method="POST")
    assert [r.status for r in posts] == [201, 200]  # GitHub's "you reacted so before"
    rollup = gh.get_repo("octo-org/widgets").get_issue(world.pull.number).get_comment(comment.id)
    assert rollup.raw_data["reactions"]["eyes"] == 1
    assert rollup.raw_data["reactions"]["total_count"] == 1
    assert fake_github.problems.take() == []  # every answer above validated


def test_an_unknown_reaction_or_comment_is_refused(fake_github: FakeGitHub, world: World) -> None:
    comment = fake_github.state.add_comment(world.repo, world.pull.number, "alice", "/triage")
    base = "/repos/octo-org/widgets/issues/comments"
    with api(fake_github, world.token) as client:
        odd = client.post(f"{base}/{comment.id}/reactions", json={"content": "thumbs"})
        gone = client.post(f"{base}/999/reactions", json={"content": "eyes"})
    assert odd.status_code == 422 and gone.status_code == 404
    assert fake_github.state.comments[comment.id].reactions == []
    assert fake_github.problems.take() == []
