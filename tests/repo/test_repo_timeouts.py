"""A repository's signature is an untrusted regex run on a shared worker: each search of its
pattern is bounded in time, a timeout is no match on that line, and the comment's footer says
once which signature ran out of time. Against the fake GitHub over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakegithub import FakeGitHub
from repo_world import (
    FROB_LOG,
    MODULE_NOT_FOUND,
    OWN_SIGNATURE,
    OWN_SIGNATURE_TEXT,
    WIDGETS,
    World,
    example_log,
    make_world,
)

from triage_bot.core.catalog import Catalog, load_signature_text
from triage_bot.core.classify import MAX_PATTERN_TIMEOUTS, CompiledCatalog, classify
from triage_bot.repo.repo_catalog import builtin_catalog

# `(?:x|xx)+y$` backtracks exponentially on a long run of x without the y. The checks a
# repository's signature goes through refuse it now; the bound at run time is the second line
# of defence, tested on a catalog built without those checks.
SLOW = (
    OWN_SIGNATURE_TEXT.replace("(?P<name>\\\\w+) is out of sync", "(?P<name>(?:x|xx)+)y$")
    .replace("frobnicator alpha is out of sync", "frobnicator xxxy")
    .replace("{name: alpha}", "{name: xxx}")
)
HOSTILE = b"2026-10-21T09:00:00.2000000Z FROB-SYNC: frobnicator " + b"x" * 60 + b"z\n"
MATCHING = b"2026-10-21T09:00:00.2000000Z FROB-SYNC: frobnicator xxxy\n"


@pytest.fixture
def world(fake_github: FakeGitHub, tmp_path: Path) -> Iterator[World]:
    built = make_world(fake_github, f"sqlite:///{tmp_path / 'triage.db'}", tmp_path)
    yield built
    built.store.close()


def test_a_slow_repository_pattern_is_refused_and_the_footer_names_it(world: World) -> None:
    world.add_file(WIDGETS, OWN_SIGNATURE, SLOW)
    hostile = FROB_LOG.replace(b"\n", b"\n" + HOSTILE * 5, 1)  # 5 lines; 60 x: hours each
    logs = {
        "hostile": hostile,
        "fine": MATCHING,  # refused: not even its matching line is claimed by it
        MODULE_NOT_FOUND: example_log(MODULE_NOT_FOUND),  # and the built-in ones run
    }
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, logs))
    [body] = world.comments(WIDGETS)
    causes = {job["name"]: job["root_cause"] for job in result["jobs"]}
    for name in ("hostile", "fine"):
        assert (causes[name] or {}).get("signature") != "widgets-frob-out-of-sync"
    assert causes[MODULE_NOT_FOUND]["signature"] == "python-module-not-found"
    footer = body.split("Problems with this repository's triage-bot files", 1)[1]
    assert f"`{OWN_SIGNATURE}:6`: pattern backtracks catastrophically" in footer


def test_only_repository_signatures_are_bounded() -> None:
    slow = load_signature_text(Path(OWN_SIGNATURE), SLOW, origin=WIDGETS, keep_source=True)[0]
    assert slow is not None and slow.from_repository
    builtin = builtin_catalog()
    assert builtin.untrusted == frozenset()
    mixed = CompiledCatalog(Catalog((*builtin.catalog.signatures, slow)))
    assert mixed.untrusted == {slow.id}
    # The brief's shape, on a line GitHub's log could hold: it ends, as no match.
    log = b"FROB-SYNC: frobnicator " + b"x" * 40 + b"b\n"
    result = classify([log * (MAX_PATTERN_TIMEOUTS + 2)], mixed)
    assert result.matches == []
    [timeout] = result.timeouts
    assert (timeout.signature.id, timeout.line, timeout.count) == (slow.id, 1, 3)
