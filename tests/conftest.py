"""Fixtures shared by the whole suite."""

from fakegithub.fixtures import fake_github  # noqa: F401
