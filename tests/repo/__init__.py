"""Tests of triage_bot.repo."""
