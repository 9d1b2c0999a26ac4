"""The triage: a run's failed jobs -> one report, with its notes and links (run) -> the sticky
comment (pipeline, sticky_comment), the check run, the base-branch comparison (baseline) and
the automatic re-run (retry), and each failed job's passing reference (reference: which run;
same_job: a job's name across matrix cells and shards; passing_cache: its log on disk).
It may import repo, store, github_api, the catalog tools, the
core and the top-level modules; never commands, service or cli.
"""
