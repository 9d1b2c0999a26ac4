"""The fake GitHub's user side: the OAuth web flow (authorize, access_token and its refusals)
and what a user access token reads, each answer of /user... checked against GitHub's OpenAPI
description by the fake itself (a mismatch fails the test on leaving `with FakeGitHub()`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fakegithub import FakeGitHub

CALLBACK = "http://127.0.0.1:9/dashboard/callback"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as started:
        widgets = started.state.add_repo("acme/widgets")
        started.state.add_repo("acme/hidden")
        started.install("acme")
        started.state.grant(widgets, "alice", "triage")
        yield started


def authorize(fake: FakeGitHub, state: str = "s", client_id: str | None = None) -> httpx.Response:
    params = {"client_id": client_id or fake.client_id, "redirect_uri": CALLBACK, "state": state}
    return httpx.get(
        f"{fake.base_url}/login/oauth/authorize", params=params, follow_redirects=False
    )


def code_for(fake: FakeGitHub, login: str) -> str:
    fake.sign_in(login)
    return parse_qs(urlsplit(authorize(fake).headers["location"]).query)["code"][0]


def exchange(
    fake: FakeGitHub, code: str, *, secret: str | None = None, **extra: str
) -> dict[str, Any]:
    form = {
        "client_id": fake.client_id,
        "client_secret": secret or fake.client_secret,
        "code": code,
        "redirect_uri": CALLBACK,
        **extra,
    }
    answer = httpx.post(
        f"{fake.base_url}/login/oauth/access_token",
        data=form,
        headers={"Accept": "application/json"},
    )
    assert answer.status_code == 200  # GitHub refuses with 200 and an `error` field
    result: dict[str, Any] = answer.json()
    return result


def test_authorize_sends_a_signed_in_user_back_with_a_code_and_the_state_verbatim(
    fake: FakeGitHub,
) -> None:
    fake.sign_in("alice")
    state = "a b&c=d/é"
    back = authorize(fake, state)
    assert back.status_code == 302
    target = urlsplit(back.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == CALLBACK
    query = parse_qs(target.query)
    assert query["state"] == [state] and len(query["code"][0]) >= 20


def test_authorize_without_a_github_session_or_for_another_client(fake: FakeGitHub) -> None:
    fake.sign_in(None)
    page = authorize(fake)
    assert page.status_code == 200 and "Sign in to GitHub" in page.text
    fake.sign_in("alice")
    assert authorize(fake, client_id="Iv23li-unknown").status_code == 404


def test_a_code_buys_one_user_token_once(fake: FakeGitHub) -> None:
    code = code_for(fake, "alice")
    first = exchange(fake, code)
    assert first["access_token"].startswith("ghu_") and first["token_type"] == "bearer"
    assert first["refresh_token"].startswith("ghr_") and first["expires_in"] == 28800
    assert exchange(fake, code)["error"] == "bad_verification_code"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"secret": "wrong"}, "incorrect_client_credentials"),
        ({"code": "never-issued"}, "bad_verification_code"),
        ({"redirect_uri": "http://127.0.0.1:9/elsewhere"}, "redirect_uri_mismatch"),
    ],
)
def test_the_exchange_refuses_as_github_does(
    fake: FakeGitHub, change: dict[str, str], error: str
) -> None:
    code = change.pop("code", None) or code_for(fake, "alice")
    answer = exchange(fake, code, **change)
    assert answer["error"] == error and "access_token" not in answer
    assert answer["error_uri"].startswith("https://docs.github.com/")


def test_an_expired_code_is_refused(fake: FakeGitHub) -> None:
    code = code_for(fake, "alice")
    later = fake.state.now() + dt.timedelta(minutes=11)
    fake.state.now = lambda: later
    assert exchange(fake, code)["error"] == "bad_verification_code"


def test_without_accept_json_the_answer_is_form_encoded(fake: FakeGitHub) -> None:
    code = code_for(fake, "alice")
    form = {"client_id": fake.client_id, "client_secret": fake.client_secret, "code": code}
    answer = httpx.post(f"{fake.base_url}/login/oauth/access_token", data=form)
    assert answer.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(answer.text)["access_token"][0].startswith("ghu_")


def user_token(fake: FakeGitHub, login: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {exchange(fake, code_for(fake, login))['access_token']}"}


def test_a_user_token_reads_the_user_and_only_their_repositories(fake: FakeGitHub) -> None:
    auth = user_token(fake, "alice")
    me = httpx.get(f"{fake.base_url}/user", headers=auth).json()
    assert me["login"] == "alice" and me["user_view_type"] == "private"
    installations = httpx.get(f"{fake.base_url}/user/installations", headers=auth).json()
    assert installations["total_count"] == 1
    installation = installations["installations"][0]
    assert installation["account"]["login"] == "acme"
    listed = httpx.get(
        f"{fake.base_url}/user/installations/{installation['id']}/repositories", headers=auth
    ).json()
    assert [r["full_name"] for r in listed["repositories"]] == ["acme/widgets"]
    permissions = listed["repositories"][0]["permissions"]
    assert permissions == {
        "admin": False,
        "maintain": False,
        "push": False,
        "triage": True,
        "pull": True,
    }


def test_a_user_with_no_role_sees_no_installation(fake: FakeGitHub) -> None:
    auth = user_token(fake, "mallory")
    installations = httpx.get(f"{fake.base_url}/user/installations", headers=auth).json()
    assert installations == {"total_count": 0, "installations": []}
    installation_id = next(iter(fake.state.installations))
    path = f"/user/installations/{installation_id}/repositories"
    assert httpx.get(f"{fake.base_url}{path}", headers=auth).status_code == 404


def test_user_routes_take_only_a_live_user_token(fake: FakeGitHub) -> None:
    installation = next(iter(fake.state.installations.values()))
    assert httpx.get(f"{fake.base_url}/user").status_code == 401
    ghs = {"Authorization": f"token {fake.token_for(installation)}"}
    assert httpx.get(f"{fake.base_url}/user", headers=ghs).status_code == 401
    auth = user_token(fake, "alice")
    later = fake.state.now() + dt.timedelta(hours=9)
    fake.state.now = lambda: later
    assert httpx.get(f"{fake.base_url}/user", headers=auth).status_code == 401


def test_the_repositories_are_paginated_with_links(fake: FakeGitHub) -> None:
    for number in range(5):
        fake.state.grant(fake.state.add_repo(f"acme/extra-{number}"), "alice", "read")
    auth = user_token(fake, "alice")
    installation_id = next(iter(fake.state.installations))
    url = f"{fake.base_url}/user/installations/{installation_id}/repositories?per_page=2"
    names: list[str] = []
    while url:
        answer = httpx.get(url, headers=auth)
        assert answer.json()["total_count"] == 6
        names += [r["full_name"] for r in answer.json()["repositories"]]
        url = answer.links.get("next", {}).get("url", "")
    assert len(names) == 6 and len(set(names)) == 6
