"""Per-repository setup: `.github/triage-bot.yml` and its JSON Schema (repo_config), the
repository's files by blob SHA (repo_files) and its own catalog (repo_catalog). It may
import the core, the catalog tools, `github_api` and `config`; never the store or above.
"""
