"""Persistence: the database (`store.Store` with its `store_*` mixins and `schema`), the job
ledger, the failures each triage records (failure_records) and the sticky comment's sections
(comment_sections). It may import the core, `github_api` (the ledger counts outages),
`config` and `metrics`; never repo, triage, commands, service or cli.
"""
