"""The command line: the parser and dispatch (cli, entry point `triage_bot.cli.cli:main`),
`triage`, `catalog`, `rerun` and `replay`. The top layer: it may import everything below.
"""
