"""The provider examples, run as scripts against loopback servers that speak each wire protocol.

Each script is pointed at a server only through the environment variables its
docstring names, so these runs go through the real SDKs and real HTTP, exactly
as they would against OpenAI, Anthropic or a local vLLM / Ollama / llama.cpp server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ._wire import Action, Reply, WireServer, tool_use
from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Cleared before each run, so only what a test sets points the script anywhere.
PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MELLEA_CTX_BASE_URL",
    "MELLEA_CTX_MODEL",
)

SUMMARY = "Omar Davis (omar_davis_3817) asked to downgrade six reservations to economy."
ANSWER = "Reservation JG7FMM is still in the business cabin: the downgrade did not go through."


def run(script: str, server: WireServer, **variables: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<script>`` with only ``variables`` pointing it at a provider."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    with server:
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / script)],
            capture_output=True,
            text=True,
            env={**env, **variables},
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    return done


def openai_support_agent(body: Any) -> Action:
    """Summarize when asked without tools; else look the reservation up once, then answer."""
    if "tools" not in body:
        return Reply(SUMMARY, usage=(2_900, 40))
    if body["messages"][-1]["role"] == "tool":
        return Reply(ANSWER)
    arguments = json.dumps({"reservation_id": "JG7FMM"})
    return Reply(tool_calls=(tool_use(("call_1", "get_reservation_details", arguments)),))


def anthropic_support_agent(body: Any) -> Action:
    """The same agent in the Messages API's terms: a tool result is a user content block.

    The goal arrives in the same user message as the sample's last tool result (the API
    merges consecutive user turns), so only a result for this agent's own call counts.
    """
    if "tools" not in body:
        return Reply(SUMMARY, usage=(2_900, 40))
    last = body["messages"][-1]["content"]
    answered = {b.get("tool_use_id") for b in last if isinstance(b, dict)}
    if "toolu_1" in answered:
        return Reply(ANSWER)
    arguments = json.dumps({"reservation_id": "JG7FMM"})
    return Reply(tool_calls=(tool_use(("toolu_1", "get_reservation_details", arguments)),))


def coding_agent(body: Any) -> Action:
    """A model that reads the config file once, then answers from it."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(f"The retry limit is 5 (from: {body['messages'][-1]['content'].split()[2]}).")
    arguments = json.dumps({"path": "src/config.py"})
    return Reply(tool_calls=(tool_use(("call_1", "read_file", arguments)),))


def texts(messages: list[Any]) -> str:
    """Every text in a request's messages, whatever the provider's shape."""
    return json.dumps(messages)


class TestOpenAIExample:
    def test_summary_then_tool_then_answer(self) -> None:
        """With OPENAI_API_KEY set, the script summarizes through the model, then runs the agent."""
        server = OpenAIWireServer(openai_support_agent)
        done = run(
            "06_openai.py",
            server,
            OPENAI_API_KEY="sk-test-examples",
            OPENAI_BASE_URL=server.base_url,
        )
        summary, call, answer = server.requests
        assert "Using OpenAI's gpt-4o-mini." == done.stdout.splitlines()[0]
        assert ANSWER in done.stdout
        assert {"Bearer sk-test-examples"} == {r.headers["authorization"] for r in server.requests}
        assert {"gpt-4o-mini"} == {r.json["model"] for r in server.requests}
        # 1: the summary request holds the old dialogue as quoted data, and offers no tools.
        assert "<conversation>" in summary.json["messages"][-1]["content"]
        assert "omar_davis_3817" in summary.json["messages"][-1]["content"]
        # 2: the agent sees the pinned policy, the checkpoint, and far fewer than 62 messages.
        messages = call.json["messages"]
        assert messages[0]["content"].startswith("# Airline Agent Policy")
        assert SUMMARY in texts(messages)
        assert len(messages) < 20
        assert ["get_reservation_details"] == [t["function"]["name"] for t in call.json["tools"]]
        # 3: the tool's result went back as a tool message answering the call.
        assert {"role": "tool", "tool_call_id": "call_1"}.items() <= answer.json["messages"][
            -1
        ].items()
        assert "business cabin" in answer.json["messages"][-1]["content"]


class TestAnthropicExample:
    def test_summary_then_tool_then_answer(self) -> None:
        """With ANTHROPIC_API_KEY set, the same run speaks the Messages API."""
        server = AnthropicWireServer(anthropic_support_agent)
        done = run(
            "07_anthropic.py",
            server,
            ANTHROPIC_API_KEY="sk-ant-test-examples",
            ANTHROPIC_BASE_URL=server.base_url,
        )
        summary, call, answer = server.requests
        assert "Using Anthropic's claude-sonnet-4-6." == done.stdout.splitlines()[0]
        assert ANSWER in done.stdout
        assert {"/v1/messages"} == {r.path for r in server.requests}
        # The key is sent as x-api-key or, by newer SDKs, as a bearer token.
        keys = {
            r.headers.get("x-api-key") or r.headers["authorization"].removeprefix("Bearer ")
            for r in server.requests
        }
        assert {"sk-ant-test-examples"} == keys
        assert "omar_davis_3817" in texts(summary.json["messages"])
        assert "tools" not in summary.json
        # The policy travels in the top-level system field, never as a message, as one
        # text block marked as a prompt-cache breakpoint.
        (block,) = call.json["system"]
        assert block["text"].startswith("# Airline Agent Policy")
        assert {"type": "ephemeral"} == block["cache_control"]
        assert "system" not in {m["role"] for m in call.json["messages"]}
        assert SUMMARY in texts(call.json["messages"])
        tool = call.json["tools"][0]
        assert ("get_reservation_details", "object") == (tool["name"], tool["input_schema"]["type"])
        # The tool's result went back as a tool_result block answering the tool_use.
        result = answer.json["messages"][-1]
        assert "user" == result["role"]
        assert [{"type": "tool_result", "tool_use_id": "toolu_1"}] == [
            {"type": b["type"], "tool_use_id": b["tool_use_id"]} for b in result["content"]
        ]
        assert "business cabin" in json.dumps(result["content"])


class TestLocalServerExample:
    def test_runs_against_a_server_given_by_environment(self) -> None:
        """With MELLEA_CTX_BASE_URL set, the example drives a real HTTP server through the SDK."""
        server = OpenAIWireServer(coding_agent)
        done = run(
            "08_local_server.py",
            server,
            MELLEA_CTX_BASE_URL=server.base_url,
            MELLEA_CTX_MODEL="qwen2.5-coder",
        )
        requests = server.requests
        assert f"Using qwen2.5-coder at {server.base_url}." == done.stdout.splitlines()[0]
        assert "The retry limit is 5" in done.stdout
        assert 2 == len(requests)
        assert {"qwen2.5-coder"} == {r.json["model"] for r in requests}
        # No key was set: a local server needs none, and the SDK still sends a placeholder.
        assert all(r.headers["authorization"].startswith("Bearer ") for r in requests)
        offered = [t["function"]["name"] for t in requests[0].json["tools"]]
        assert ["read_file", "compact_context", "recall"] == offered
        assert requests[1].json["messages"][-1]["content"].startswith("RETRY_LIMIT = 5")
