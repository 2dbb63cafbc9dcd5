"""Fixtures: a fresh wire server per test, closed (threads joined) when the test ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from ._wire import THREAD_PREFIX
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIWireServer]:
    """An `OpenAIWireServer` on a free loopback port."""
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicWireServer]:
    """An `AnthropicWireServer` on a free loopback port."""
    with AnthropicWireServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_server_thread_outlives_its_test() -> Iterator[None]:
    """Fail a test that leaves a wire server's thread running (a server never closed)."""
    yield
    leaked = [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    assert [] == leaked
