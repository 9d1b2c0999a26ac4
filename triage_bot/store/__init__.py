"""Persistence: the database (`store.Store`, its tables in `schema`, its SQLite connections
made safe in `store_sqlite`, what its errors mean in `store_errors`), the job ledger, the
failures each triage records (failure_records) and the sticky comment's sections
(comment_sections). It may import the core, `github_api` (the ledger counts outages),
`config` and `metrics`; never repo, triage, commands, service or cli.
"""
