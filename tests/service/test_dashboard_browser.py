"""The dashboard as its users meet it (issue #14 item 5): headless Chromium (Debian's, through
playwright) against the app `serve` builds, run by uvicorn on loopback, signing in through the
fake GitHub's OAuth pages, which play github.com for a user who already authorized the App.

Each test leaves a screenshot in /tmp/dash_*.png for a person to look at. Without a browser
the tests are skipped here, and fail on CI (CI=true), as tests/render's do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_world import (
    VAULT,
    VAULT_STRINGS,
    WIDGETS,
    WIDGETS_FAILED,
    WIDGETS_SIGNATURE,
    World,
    dashboard_world,
)
from render.test_first_screen import browser

from service.test_server import run_uvicorn
from triage_bot.service.dashboard_auth import SESSION_COOKIE
from triage_bot.service.queue import JobQueue
from triage_bot.service.server import create_app

__all__ = ["browser"]  # a fixture: Debian's Chromium through playwright, or skip (fail on CI)

SCREENSHOTS = Path("/tmp")
VIEWPORT = {"width": 1200, "height": 900}


class Site:
    """The served app and the fake GitHub behind it, for one test."""

    def __init__(self, world: World, base: str) -> None:
        self.world, self.base = world, base

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with dashboard_world(tmp_path) as world:
        queue = JobQueue.from_settings(world.settings, world.store)
        app = create_app(world.settings, world.store, queue)
        for base in run_uvicorn(app):
            yield Site(world, base)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        yield context.new_page()
    finally:
        context.close()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"dash_{name}.png"), full_page=True)


def test_a_reader_signs_in_and_sees_the_charts(site: Site, page: Any) -> None:
    site.world.fake.sign_in("alice")
    response = page.goto(site.url(f"/dashboard/{WIDGETS}"))
    assert response.status == 200
    assert page.url == site.url(f"/dashboard/{WIDGETS}")  # back where the user asked to go
    shot(page, "reader")
    assert page.locator("svg").count() >= 1
    text = page.inner_text("body")
    assert WIDGETS_SIGNATURE in text and str(WIDGETS_FAILED) in text
    # The session cookie is out of the page's reach (HttpOnly).
    assert SESSION_COOKIE not in page.evaluate("document.cookie")
    cookie = next(c for c in page.context.cookies() if c["name"] == SESSION_COOKIE)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/dashboard"
    page.goto(site.url("/dashboard"))
    shot(page, "index")
    assert page.locator(f'a[href="/dashboard/{WIDGETS}"]').count() == 1
    assert VAULT not in page.content()


def test_a_user_without_access_gets_403_and_none_of_the_data(site: Site, page: Any) -> None:
    site.world.fake.sign_in("alice")
    response = page.goto(site.url(f"/dashboard/{VAULT}"))
    assert response.status == 403
    shot(page, "403")
    html = page.content()
    for secret in (*VAULT_STRINGS, VAULT, "vault"):
        assert secret not in html
    assert page.locator("svg").count() == 0


def test_a_user_with_access_to_the_other_repository_sees_it(site: Site, page: Any) -> None:
    """The 403 above is about alice, not about the repository: bob reads acme/vault."""
    site.world.fake.sign_in("bob")
    response = page.goto(site.url(f"/dashboard/{VAULT}"))
    assert response.status == 200 and VAULT_STRINGS[0] in page.inner_text("body")


def test_a_forged_state_is_refused(site: Site, page: Any) -> None:
    site.world.fake.sign_in(None)  # GitHub shows its sign-in page: the flow stops there
    page.goto(site.url("/dashboard/login"))
    assert "Sign in to GitHub" in page.inner_text("body")
    response = page.goto(site.url("/dashboard/callback?code=stolen&state=forged"))
    assert response.status == 400
    shot(page, "forged_state")
    assert "state" in page.inner_text("body")
    assert site.world.fake.requests("/login/oauth/access_token") == []
    assert all(c["name"] != SESSION_COOKIE for c in page.context.cookies())


def test_logout_ends_the_session(site: Site, page: Any) -> None:
    site.world.fake.sign_in("alice")
    response = page.goto(site.url(f"/dashboard/{WIDGETS}"))
    assert response.status == 200
    # No script may run on the page: the policy says so in the header, not only in a meta tag.
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page.click("text=Sign out")  # the link every page's frame carries
    shot(page, "logout")
    assert "signed out" in page.inner_text("body")
    assert all(c["name"] != SESSION_COOKIE for c in page.context.cookies())
    site.world.fake.sign_in(None)  # and out of GitHub: nothing signs the browser back in
    page.goto(site.url(f"/dashboard/{WIDGETS}"))
    assert "Sign in to GitHub" in page.inner_text("body")
    assert WIDGETS_SIGNATURE not in page.content()


def test_a_tampered_cookie_is_not_accepted(site: Site, page: Any) -> None:
    site.world.fake.sign_in("alice")
    assert page.goto(site.url(f"/dashboard/{WIDGETS}")).status == 200
    cookie = next(c for c in page.context.cookies() if c["name"] == SESSION_COOKIE)
    value = cookie["value"]
    tampered = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
    page.context.clear_cookies()
    page.context.add_cookies([{**cookie, "value": tampered}])
    site.world.fake.sign_in(None)
    page.goto(site.url(f"/dashboard/{WIDGETS}"))
    shot(page, "tampered")
    assert "Sign in to GitHub" in page.inner_text("body")
    assert WIDGETS_SIGNATURE not in page.content()


def test_github_down_during_sign_in_shows_a_503_and_no_data(site: Site, page: Any) -> None:
    site.world.fake.faults.fail("/user/installations", status=502, times=None)
    site.world.fake.sign_in("alice")
    response = page.goto(site.url(f"/dashboard/{WIDGETS}"))
    assert response.status == 503
    shot(page, "github_down")
    assert "GitHub" in page.inner_text("body")
    assert WIDGETS_SIGNATURE not in page.content() and page.locator("svg").count() == 0
