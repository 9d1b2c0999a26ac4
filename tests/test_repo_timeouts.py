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

from triage_bot.catalog import Catalog, load_signature_text
from triage_bot.classify import MAX_PATTERN_TIMEOUTS, CompiledCatalog, classify
from triage_bot.repo_catalog import builtin_catalog

# `(?:x|xx)+y$` backtracks exponentially on a long run of x without the y; `catalog lint`'s
# probe pumps other characters, so it lets this one through (its examples are fine).
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


def test_a_slow_repository_pattern_times_out_and_the_footer_names_it_once(world: World) -> None:
    world.add_file(WIDGETS, OWN_SIGNATURE, SLOW)
    hostile = FROB_LOG.replace(b"\n", b"\n" + HOSTILE * 5, 1)  # 5 lines; 60 x: hours each
    logs = {
        "hostile": hostile,
        "hostile-too": HOSTILE,
        "fine": MATCHING,  # the same signature in another job still matches
        MODULE_NOT_FOUND: example_log(MODULE_NOT_FOUND),  # and the built-in ones run
    }
    result = world.triage(WIDGETS, world.failed_run(WIDGETS, logs))
    [body] = world.comments(WIDGETS)
    causes = {job["name"]: job["root_cause"] for job in result["jobs"]}
    assert causes["fine"]["signature"] == "widgets-frob-out-of-sync"
    # Skipped for the rest of "hostile" after 3 timeouts: its real FROB-SYNC line too.
    for name in ("hostile", "hostile-too"):
        assert (causes[name] or {}).get("signature") != "widgets-frob-out-of-sync"
    assert causes[MODULE_NOT_FOUND]["signature"] == "python-module-not-found"
    footer = body.split("Problems with this repository's triage-bot files", 1)[1]
    assert body.count("took over 0.1 s") == 1
    assert (
        f"`{OWN_SIGNATURE}:6`: the pattern of 'widgets-frob-out-of-sync' took over 0.1 s on "
        "line 2 of job 'hostile' and 3 more line(s), taken as no match there (then skipped for "
        "the rest of the job)"
    ) in footer


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
