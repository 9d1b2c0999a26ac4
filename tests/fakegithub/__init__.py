"""A fake GitHub for tests: a real loopback HTTP server that keeps state and answers the part
of GitHub's REST API the bot uses, every answer checked against GitHub's OpenAPI description.
"""

from __future__ import annotations

from .fake import FakeGitHub
from .faults import Faults
from .models import RecordedRequest
from .problems import FakeGitHubError
from .specs import NewJob, NewStep
from .state import State

__all__ = [
    "FakeGitHub",
    "FakeGitHubError",
    "Faults",
    "NewJob",
    "NewStep",
    "RecordedRequest",
    "State",
]
