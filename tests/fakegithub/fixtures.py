"""pytest fixtures. Import them into tests/conftest.py:

from fakegithub.fixtures import fake_github  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake import FakeGitHub

__all__ = ["fake_github"]


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    """A running fake GitHub; teardown raises FakeGitHubError if it misbehaved."""
    with FakeGitHub() as fake:
        yield fake
