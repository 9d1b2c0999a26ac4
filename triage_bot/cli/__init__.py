"""The command line: the parser, dispatch, `serve`, `worker` and `catalog` (cli, entry point
`triage_bot.cli.cli:main`), `triage` and `rerun` (cli_triage), `report` (cli_report), and
`replay`. The top layer: it may import everything below.
"""
