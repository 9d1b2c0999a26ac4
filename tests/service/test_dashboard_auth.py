"""The dashboard's sign-in and access check over HTTP (no browser): the app as `serve` builds
it, in starlette's TestClient, signing in through the fake GitHub's real OAuth endpoints.

The browser tests (test_dashboard_browser.py) walk the same rules in Chromium; these cover
each rule and each refusal quickly, and the settings."""

from __future__ import annotations

import base64
import secrets
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from dashboard_world import (
    VAULT,
    VAULT_FAILED,
    VAULT_STRINGS,
    WIDGETS,
    WIDGETS_FAILED,
    WIDGETS_SIGNATURE,
    World,
    dashboard_settings,
    dashboard_world,
)
from fakegithub import FakeGitHub
from itsdangerous import URLSafeTimedSerializer
from starlette.testclient import TestClient

from triage_bot.config import SettingsError, load_settings
from triage_bot.service import dashboard_auth
from triage_bot.service.dashboard_auth import SESSION_COOKIE, SIGN_IN_COOKIE
from triage_bot.service.dashboard_github import next_page_url
from triage_bot.service.queue import JobQueue
from triage_bot.service.server import create_app
from triage_bot.store.store import Store

PAGES = ("/dashboard", f"/dashboard/{WIDGETS}", "/dashboard/login", "/dashboard/callback")


class Clock:
    """time.time, moved on by the tests that need GitHub's word to go stale."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with dashboard_world(tmp_path) as built:
        yield built


def client_for(world: World, clock: Clock | None = None, base: str = "http://testserver") -> Any:
    queue = JobQueue.from_settings(world.settings, world.store)
    app = create_app(world.settings, world.store, queue, clock=clock or time.time)
    return TestClient(app, base_url=base, follow_redirects=False)


def through_github(client: Any, login_response: Any) -> Any:
    """Follow the login's redirect to the fake's authorize page and back to the callback."""
    authorize = login_response.headers["location"]
    back = httpx.get(authorize, follow_redirects=False)
    assert back.status_code == 302, back.text
    callback = urlsplit(back.headers["location"])
    assert callback.path == "/dashboard/callback"
    return client.get(f"{callback.path}?{callback.query}")


def sign_in(client: Any, fake: FakeGitHub, login: str, path: str) -> Any:
    """Ask for `path`, sign in as `login` through the fake, and return the page shown after."""
    fake.sign_in(login)
    first = client.get(path)
    assert first.status_code == 302 and first.headers["location"].startswith("/dashboard/login")
    called_back = through_github(client, client.get(first.headers["location"]))
    assert called_back.status_code == 303, called_back.text
    return client.get(called_back.headers["location"])


def test_off_without_the_oauth_client_every_dashboard_path_is_404(tmp_path: Path) -> None:
    with FakeGitHub() as fake:
        settings = load_settings(
            {
                "WEBHOOK_SECRET": "s",
                "TRIAGE_DATA_DIR": str(tmp_path),
                "GITHUB_API_URL": fake.base_url,
            }
        )
        assert not settings.dashboard_enabled
        store = Store(settings.database_url)
        try:
            client = TestClient(
                create_app(settings, store, JobQueue.from_settings(settings, store))
            )
            for path in (*PAGES, "/dashboard/logout"):
                assert client.get(path, follow_redirects=False).status_code == 404, path
            assert client.get("/healthz").status_code == 200
        finally:
            store.close()
        assert fake.requests() == []  # nothing asked of GitHub


def test_not_signed_in_is_sent_to_sign_in_with_the_way_back(world: World) -> None:
    client = client_for(world)
    for path in ("/dashboard", f"/dashboard/{WIDGETS}?days=7"):
        response = client.get(path)
        assert response.status_code == 302
        assert response.headers["location"] == f"/dashboard/login?next={quote(path, safe='')}"
        assert WIDGETS_SIGNATURE not in response.text
    assert world.fake.requests() == []


def test_login_redirects_to_githubs_authorize_with_a_fresh_state_bound_to_a_cookie(
    world: World,
) -> None:
    client = client_for(world)
    states = []
    for _ in range(2):
        response = client.get("/dashboard/login")
        assert response.status_code == 302
        target = urlsplit(response.headers["location"])
        assert f"{target.scheme}://{target.netloc}" == world.fake.base_url
        assert target.path == "/login/oauth/authorize"
        query = parse_qs(target.query)
        assert query["client_id"] == [world.fake.client_id]
        assert query["redirect_uri"] == ["http://testserver/dashboard/callback"]
        assert len(query["state"][0]) >= 32
        states.append(query["state"][0])
        cookie = response.headers["set-cookie"]
        assert cookie.startswith(f"{SIGN_IN_COOKIE}=")
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/dashboard" in cookie
        assert "Max-Age=600" in cookie and "Secure" not in cookie  # plain http here
        assert query["state"][0] not in cookie.split(";")[0]  # signed and encoded, not bare
    assert states[0] != states[1]


def test_a_reader_signs_in_and_sees_the_repository(world: World) -> None:
    client = client_for(world)
    page = sign_in(client, world.fake, "alice", f"/dashboard/{WIDGETS}")
    assert page.status_code == 200
    assert WIDGETS_SIGNATURE in page.text and str(WIDGETS_FAILED) in page.text
    assert page.headers["cache-control"] == "no-store"
    asked = [(r.method, r.path) for r in world.fake.requests()]
    installation = world.fake.state.user_installations(
        world.fake.app, world.fake.state.users["alice"]
    )[0]
    assert asked == [
        ("GET", "/login/oauth/authorize"),
        ("POST", "/login/oauth/access_token"),
        ("GET", "/user"),
        ("GET", "/user/installations"),
        ("GET", f"/user/installations/{installation.id}/repositories"),
    ]
    index = client.get("/dashboard")
    assert index.status_code == 200 and WIDGETS in index.text and VAULT not in index.text


def test_the_session_cookie_holds_no_token_and_only_what_it_needs(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    client = client_for(world)
    sign_in(client, world.fake, "alice", "/dashboard")
    assert "alice signed in, reads 1 repositories" in caplog.text
    raw = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    (token,) = world.fake.state.user_tokens  # the one user token GitHub issued
    payload = raw.split(".")[0]
    decoded = _decoded(payload)
    assert token not in raw and token not in decoded
    assert token not in caplog.text and world.fake.client_secret not in caplog.text
    value = session_value(world, client)
    assert set(value) == {"login", "repos", "checked", "sid"}
    assert value["login"] == "alice" and value["repos"] == [WIDGETS]


def _decoded(payload: str) -> str:
    compressed = payload.startswith(".")
    data = base64.urlsafe_b64decode(payload.lstrip(".") + "=" * (-len(payload) % 4))
    return (zlib.decompress(data) if compressed else data).decode("utf-8", "replace")


def test_a_user_without_access_gets_403_that_names_nothing(world: World) -> None:
    client = client_for(world)
    page = sign_in(client, world.fake, "alice", f"/dashboard/{VAULT}")
    assert page.status_code == 403
    for secret in (*VAULT_STRINGS, VAULT, "vault", str(VAULT_FAILED)):
        assert secret not in page.text
    # The same page for a repository that does not exist, one not installed, and one with data.
    for other in ("acme/no-such-repo", "elsewhere/unrelated", "ACME/VAULT"):
        again = client.get(f"/dashboard/{other}")
        assert again.status_code == 403 and again.text == page.text


def test_github_names_are_case_insensitive(world: World) -> None:
    client = client_for(world)
    page = sign_in(client, world.fake, "alice", "/dashboard/ACME/Widgets")
    assert page.status_code == 200 and WIDGETS_SIGNATURE in page.text


def test_a_user_with_no_role_anywhere_sees_an_empty_index_and_403s(world: World) -> None:
    client = client_for(world)
    index = sign_in(client, world.fake, "mallory", "/dashboard")
    assert index.status_code == 200 and "acme/" not in index.text
    assert client.get(f"/dashboard/{WIDGETS}").status_code == 403


@pytest.mark.parametrize("forgery", ["forged", "", None])
def test_a_forged_or_missing_state_is_400_and_no_code_is_exchanged(
    world: World, forgery: str | None
) -> None:
    client = client_for(world)
    world.fake.sign_in("alice")
    login = client.get("/dashboard/login")
    back = httpx.get(login.headers["location"], follow_redirects=False)
    query = parse_qs(urlsplit(back.headers["location"]).query)
    sent = {"code": query["code"][0]} | ({} if forgery is None else {"state": forgery})
    refused = client.get("/dashboard/callback", params=sent)
    assert refused.status_code == 400 and "state" in refused.text
    assert world.fake.requests("/login/oauth/access_token") == []
    assert client.get(f"/dashboard/{WIDGETS}").status_code == 302  # still not signed in


def test_a_callback_without_the_sign_in_cookie_is_400(world: World) -> None:
    """Another browser's code and state (a login CSRF) are refused: the state is bound to the
    browser that started the sign-in."""
    starter, victim = client_for(world), client_for(world)
    world.fake.sign_in("mallory")
    back = httpx.get(starter.get("/dashboard/login").headers["location"], follow_redirects=False)
    callback = urlsplit(back.headers["location"])
    refused = victim.get(f"{callback.path}?{callback.query}")
    assert refused.status_code == 400
    assert world.fake.requests("/login/oauth/access_token") == []


def test_a_bad_code_is_400_with_a_way_to_sign_in_again(world: World) -> None:
    client = client_for(world)
    login = client.get("/dashboard/login")
    state = parse_qs(urlsplit(login.headers["location"]).query)["state"][0]
    refused = client.get("/dashboard/callback", params={"code": "not-a-code", "state": state})
    assert refused.status_code == 400 and "/dashboard/login" in refused.text
    assert f"{SESSION_COOKIE}=" not in refused.headers.get("set-cookie", "")


def test_a_wrong_client_secret_is_an_operator_error_not_a_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with dashboard_world(tmp_path, GITHUB_CLIENT_SECRET="not-the-secret") as world:
        client = client_for(world)
        world.fake.sign_in("alice")
        answer = through_github(client, client.get("/dashboard/login"))
        assert answer.status_code == 500 and "GITHUB_CLIENT_SECRET" in answer.text
        assert "incorrect_client_credentials" in caplog.text
        assert client.get("/dashboard").status_code == 302


def test_github_down_during_sign_in_is_a_503_that_shows_nothing(world: World) -> None:
    client = client_for(world)
    world.fake.faults.fail("/user/installations", status=503, times=None)
    world.fake.sign_in("alice")
    first = client.get(f"/dashboard/{WIDGETS}")
    answer = through_github(client, client.get(first.headers["location"]))
    assert answer.status_code == 503 and "GitHub" in answer.text
    assert WIDGETS_SIGNATURE not in answer.text
    assert f'href="/dashboard/login?next={quote(f"/dashboard/{WIDGETS}", safe="")}"' in answer.text
    assert client.get(f"/dashboard/{WIDGETS}").status_code == 302


def test_github_unreachable_is_a_503(tmp_path: Path) -> None:
    with dashboard_world(tmp_path) as world:
        client = client_for(world)
        world.fake.sign_in("alice")
        login = client.get("/dashboard/login")
        back = httpx.get(login.headers["location"], follow_redirects=False)
    # The fake has stopped: the code exchange finds nobody listening.
    callback = urlsplit(back.headers["location"])
    answer = client.get(f"{callback.path}?{callback.query}")
    assert answer.status_code == 503


def test_logout_ends_the_session_and_a_copy_of_its_cookie(world: World) -> None:
    client = client_for(world)
    sign_in(client, world.fake, "alice", f"/dashboard/{WIDGETS}")
    copied = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    out = client.post("/dashboard/logout")
    assert out.status_code == 200
    assert f'{SESSION_COOKIE}=""' in out.headers["set-cookie"]
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert client.get(f"/dashboard/{WIDGETS}").status_code == 302
    replay = client_for_same_app(client)
    replay.cookies.set(SESSION_COOKIE, copied, path="/dashboard")
    assert replay.get(f"/dashboard/{WIDGETS}").status_code == 302


def client_for_same_app(client: Any) -> Any:
    return TestClient(client.app, follow_redirects=False)


@pytest.mark.parametrize("change", ["flip", "other-key", "sign-in-cookie", "unsigned"])
def test_a_tampered_cookie_is_not_accepted(world: World, change: str) -> None:
    client = client_for(world)
    sign_in(client, world.fake, "alice", "/dashboard")
    raw = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    key = world.settings.session_key
    forged = {
        "flip": raw[:-3] + ("A" if raw[-3] != "A" else "B") + raw[-2:],
        "other-key": URLSafeTimedSerializer(b"x" * 32, salt="triage-bot dashboard session").dumps(
            {"login": "alice", "repos": [VAULT], "checked": 2e9, "sid": "s"}
        ),
        "sign-in-cookie": URLSafeTimedSerializer(key, salt="triage-bot dashboard sign-in").dumps(
            {"login": "alice", "repos": [VAULT], "checked": 2e9, "sid": "s"}
        ),
        "unsigned": '{"login": "alice", "repos": ["acme/vault"]}',
    }[change]
    fresh = client_for_same_app(client)
    fresh.cookies.set(SESSION_COOKIE, forged, path="/dashboard")
    answer = fresh.get(f"/dashboard/{VAULT}")
    assert answer.status_code == 302 and answer.headers["location"].startswith("/dashboard/login")
    assert fresh.get(f"/dashboard/{WIDGETS}").status_code == 302


def test_access_is_asked_of_github_again_after_the_ttl(world: World) -> None:
    clock = Clock()
    client = client_for(world, clock)
    assert sign_in(client, world.fake, "alice", f"/dashboard/{WIDGETS}").status_code == 200
    clock.now += dashboard_auth.ACCESS_TTL - 1
    assert client.get(f"/dashboard/{WIDGETS}").status_code == 200
    # GitHub takes alice's role away; the next page past the TTL asks again and refuses.
    with world.fake.state.lock:
        del world.fake.state.roles[(world.fake.state.repo_by_name("acme", "widgets").id, "alice")]  # type: ignore[union-attr]
    clock.now += 2
    stale = client.get(f"/dashboard/{WIDGETS}")
    assert stale.status_code == 302
    again = through_github(client, client.get(stale.headers["location"]))
    assert client.get(again.headers["location"]).status_code == 403


@pytest.mark.parametrize(
    "wanted", ["https://evil.example/x", "//evil.example/x", "/elsewhere", "/dashboard\\x"]
)
def test_after_sign_in_only_a_dashboard_path_is_followed(world: World, wanted: str) -> None:
    client = client_for(world)
    world.fake.sign_in("alice")
    login = client.get("/dashboard/login", params={"next": wanted})
    called_back = through_github(client, login)
    assert called_back.status_code == 303 and called_back.headers["location"] == "/dashboard"


def test_over_https_the_cookies_are_secure(world: World) -> None:
    client = client_for(world, base="https://testserver")
    login = client.get("/dashboard/login")
    assert "Secure" in login.headers["set-cookie"]
    assert parse_qs(urlsplit(login.headers["location"]).query)["redirect_uri"] == [
        "https://testserver/dashboard/callback"
    ]


def test_many_repositories_are_read_over_githubs_pages(world: World) -> None:
    """A user who reads 250 repositories (3 pages of GitHub's 100): every one is readable."""
    fake = world.fake
    names = [f"acme/service-{number:03d}" for number in range(250)]
    for name in names:
        fake.state.grant(fake.state.add_repo(name), "carol", "read")
    client = client_for(world)
    assert sign_in(client, fake, "carol", f"/dashboard/{names[-1]}").status_code == 200
    assert len(fake.requests(r"/user/installations/\d+/repositories")) == 3
    assert client.get(f"/dashboard/{names[0]}").status_code == 200
    assert client.get(f"/dashboard/{VAULT}").status_code == 403
    assert "spilled" not in session_value(world, client)  # compressed, it fits the cookie


def session_value(world: World, client: Any) -> dict[str, Any]:
    raw = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    serializer = URLSafeTimedSerializer(
        world.settings.session_key, salt="triage-bot dashboard session"
    )
    value: dict[str, Any] = serializer.loads(raw)
    return value


def test_a_list_too_long_for_a_cookie_stays_in_the_servers_memory(world: World) -> None:
    """600 repositories whose names do not compress: the cookie keeps under the browsers'
    4 KiB with a reference; another server process (here: a new app) does not know it and
    sends the user through the sign-in again, never past the check."""
    fake = world.fake
    names = [f"acme/{secrets.token_hex(8)}" for _ in range(600)]
    for name in names:
        fake.state.grant(fake.state.add_repo(name), "dave", "read")
    client = client_for(world)
    assert sign_in(client, fake, "dave", f"/dashboard/{names[0]}").status_code == 200
    raw = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    assert len(raw) <= dashboard_auth.MAX_COOKIE_VALUE
    value = session_value(world, client)
    assert value["repos"] is None and value["spilled"]
    assert client.get(f"/dashboard/{names[-1]}").status_code == 200
    assert client.get(f"/dashboard/{VAULT}").status_code == 403
    elsewhere = client_for(world)
    elsewhere.cookies.set(SESSION_COOKIE, raw, path="/dashboard")
    assert elsewhere.get(f"/dashboard/{names[0]}").status_code == 302


def test_pages_follow_links_on_the_apis_origin_only() -> None:
    """The user token rides on each page's request: a Link to another host is not followed."""
    api = "https://api.github.com"
    for elsewhere in (
        "https://evil.example",
        "http://api.github.com",
        "https://api.github.com:8443",
    ):
        link = f'<{elsewhere}/user/installations?page=2>; rel="next"'
        assert next_page_url(httpx.Response(200, headers={"Link": link}), api) is None
    link = f'<{api}/user/installations?page=2>; rel="next"'
    following = next_page_url(httpx.Response(200, headers={"Link": link}), api)
    assert following == f"{api}/user/installations?page=2"
    assert next_page_url(httpx.Response(200), api) is None


# ---- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GITHUB_CLIENT_ID": "Iv1.x"}, "GITHUB_CLIENT_SECRET: required with GITHUB_CLIENT_ID"),
        ({"GITHUB_CLIENT_SECRET": "s"}, "GITHUB_CLIENT_ID: required with GITHUB_CLIENT_SECRET"),
        (
            {
                "GITHUB_CLIENT_ID": "i",
                "GITHUB_CLIENT_SECRET": "s",
                "DASHBOARD_SESSION_KEY": "short",
            },
            "DASHBOARD_SESSION_KEY: must be at least 32 characters",
        ),
        ({"GITHUB_WEB_URL": "github.com"}, "GITHUB_WEB_URL: must be an http(s) URL"),
    ],
)
def test_settings_errors_are_one_line_naming_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(env)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("api", "web"),
    [
        (None, "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
    ],
)
def test_the_web_host_follows_the_api_unless_set(api: str | None, web: str) -> None:
    env = {"GITHUB_API_URL": api} if api else {}
    assert load_settings(env).github_web_url == web
    assert load_settings({**env, "GITHUB_WEB_URL": "https://w.example/"}).github_web_url == (
        "https://w.example"
    )


def test_the_session_key_is_derived_from_the_secret_unless_set(tmp_path: Path) -> None:
    base = {"GITHUB_CLIENT_ID": "i", "GITHUB_CLIENT_SECRET": "secret-one"}
    derived = load_settings(base).session_key
    assert len(derived) == 32 and b"secret-one" not in derived
    assert load_settings({**base, "GITHUB_CLIENT_SECRET": "secret-two"}).session_key != derived
    assert load_settings({**base, "DASHBOARD_SESSION_KEY": "k" * 40}).session_key == b"k" * 40
    assert load_settings(base).dashboard_enabled and not load_settings({}).dashboard_enabled


def test_a_session_signed_with_the_old_secret_is_refused_after_rotation(world: World) -> None:
    client = client_for(world)
    sign_in(client, world.fake, "alice", "/dashboard")
    raw = client.cookies.get(SESSION_COOKIE, path="/dashboard")
    rotated = dashboard_settings(
        world.fake, world.settings.data_dir, GITHUB_CLIENT_SECRET="rotated-secret"
    )
    world.settings = rotated
    other = client_for(world)
    other.cookies.set(SESSION_COOKIE, raw, path="/dashboard")
    assert other.get("/dashboard").status_code == 302
