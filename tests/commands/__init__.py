"""Tests of triage_bot.commands."""
