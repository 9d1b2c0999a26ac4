"""Tests of triage_bot.core."""
