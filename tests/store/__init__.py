"""Tests of triage_bot.store."""
