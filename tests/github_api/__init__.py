"""Tests of triage_bot.github_api."""
