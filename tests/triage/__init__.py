"""Tests of triage_bot.triage."""
