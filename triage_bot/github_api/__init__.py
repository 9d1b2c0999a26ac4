"""GitHub: the REST API client (runs, jobs, pull requests, comments, check runs, contents),
the App's authentication, retry and rate-limit policy, the log download (no token to the log
host) and the outage rule for logs GitHub will not serve yet. Callers import from
`github_api.github`. It may import the core, `config` and `metrics`; never the store, the
service or anything else above it. (Named `github_api`, not `github`, so that it is never
confused with PyGithub's top-level `github` package, which its modules import.)
"""
