"""Tests of triage_bot.catalog_tools."""
