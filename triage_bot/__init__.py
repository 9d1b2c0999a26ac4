"""triage-bot: triage failed CI logs against a catalog of failure signatures."""

__version__ = "0.1.0"
