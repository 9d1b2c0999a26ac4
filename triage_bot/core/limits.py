"""The bounds on what signature files and repositories hand the bot, in one place.

Documented in README.md ("Per-repository config") and patterns/README.md ("Limits"): keep
those true when a number here changes.
"""

from __future__ import annotations

# ---- a YAML file (a signature, `.github/triage-bot.yml`): triage_bot.core.safe_yaml -------------
MAX_YAML_BYTES = 64 * 1024  # its size, in UTF-8 bytes
MAX_YAML_DEPTH = 20  # mappings and sequences inside one another (a signature needs 4)
# Aliases (`*name`) may repeat an anchored node only while the document, with every alias
# expanded, stays under these: a few hundred bytes of nested aliases otherwise expand to
# billions of nodes ("billion laughs") in whatever walks the data (the schema check, repr).
MAX_YAML_NODES = 10_000  # nodes, aliases expanded
MAX_YAML_CHARS = 4 * MAX_YAML_BYTES  # characters of scalars, aliases expanded

# ---- a signature -------------------------------------------------------------------------------
MAX_EXAMPLES = 50  # tests.match, and tests.no_match, each
MAX_WINDOW_BYTES = 256 * 1024  # its `.log` window (catalog lint and catalog test)

# ---- a repository's files: triage_bot.repo.repo_files --------------------------------------------
MAX_FILE_BYTES = MAX_YAML_BYTES  # the config or one signature file
MAX_SIGNATURE_FILES = 50  # signature files used; the rest (by path) are ignored, and said so
MAX_FOLDERS = 20  # folders listed under the patterns folder (one request each)

# ---- messages ----------------------------------------------------------------------------------
MAX_MESSAGE_CHARS = 200  # a schema error's text, which quotes the value it is about
# Schema errors told per file: past them a signature is refused and a config gives every
# default (a 64 KiB list can hold 30,000 wrong items, each an error with a line to find).
MAX_SCHEMA_ERRORS = 20
