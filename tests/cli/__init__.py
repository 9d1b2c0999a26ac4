"""Tests of triage_bot.cli."""
