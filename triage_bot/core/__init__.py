"""The matching core: job logs read alike whatever the CI, the catalog of failure signatures
(safe YAML, limits, the caches), the prefilter engines, the streaming classifier and its
ranking, the comparison with a passing log (compare), the report, and the comment's markdown
(render, with sanitize for untrusted values and redact with the gitleaks rules in
`secret_rules/`). It may import only the standard library, third-party libraries and itself:
no GitHub, no database, no service, nothing of `triage_bot` above it.
"""
