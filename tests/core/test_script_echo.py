"""GitHub echoes a step's script under `##[group]Run`, each line in bold cyan: the classifier
takes those lines for the source they are, not for output (issue #11's unseen pairs: a tidy
check's `echo "ERROR: go.mod/go.sum are not up-to-date..."` was a best guess twice)."""

from __future__ import annotations

from triage_bot.core.catalog import load_catalog
from triage_bot.core.classify import CompiledCatalog, classify

STAMP = "2024-05-01T10:00:00.0000000Z "
SCRIPT = [
    "##[group]Run git describe --tags",
    "\x1b[36;1mif ! git describe --tags; then\x1b[0m",
    '\x1b[36;1m  echo "fatal: No names found, cannot describe anything."\x1b[0m',
    '\x1b[36;1m  echo "ERROR: the release tag is missing" >&2\x1b[0m',
    "\x1b[36;1mfi\x1b[0m",
    "shell: /usr/bin/bash -e {0}",
    "##[endgroup]",
]


def _log(output: list[str]) -> bytes:
    lines = [*SCRIPT, *output, "##[error]Process completed with exit code 1."]
    return "".join(f"{STAMP}{line}\n" for line in lines).encode()


CATALOG = CompiledCatalog(load_catalog())


def test_the_echoed_script_is_neither_a_match_nor_a_best_guess() -> None:
    result = classify(
        [_log(["checking the tags", "ERROR: upload failed: 503 from the registry"])], CATALOG
    )
    reported = [m.line for m in result.matches] + [f.line for f in result.fallback_lines]
    assert not {3, 4} & set(reported)  # the echo lines
    assert 9 in [f.line for f in result.fallback_lines]  # the output's error


def test_the_same_line_printed_by_the_script_is_matched() -> None:
    result = classify([_log(["fatal: No names found, cannot describe anything."])], CATALOG)
    assert result.root_cause is not None
    assert (result.root_cause.signature.id, result.root_cause.line) == ("git-describe-no-tags", 8)


def test_a_bold_cyan_line_is_output_when_github_did_not_print_it_so() -> None:
    # Only the raw line's own start counts: colour later in a line is the tool's.
    line = "ERROR: \x1b[36;1mupload failed\x1b[0m: 503 from the registry"
    result = classify([_log([line])], CATALOG)
    assert 8 in [f.line for f in result.fallback_lines]
