"""GitHub: the REST API through PyGithub (runs, jobs, pull requests, comments, check runs,
contents, re-runs) with our limits, errors and metrics on its requester; the App's shared
installation tokens; the log download with httpx (no token to the log host); and the outage
rule for logs GitHub will not serve yet. Callers import from `github_api.github`. It may
import the core, `config` and `metrics`; never the store, the service or anything else above
it. (Named `github_api`, not `github`, so that it is never confused with PyGithub's top-level
`github` package, which its modules import.)
"""
