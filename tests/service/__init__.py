"""Tests of triage_bot.service."""
