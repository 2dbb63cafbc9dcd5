"""The OpenAI-compatible example, run as a script against a loopback Chat Completions server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._wire import Action, Reply, tool_use
from .openai_server import OpenAIWireServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "react_openai_compatible.py"


def agent(body: Any) -> Action:
    """A model that reads the config file once, then answers from it."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(f"The retry limit is 5 (from: {body['messages'][-1]['content'].split()[2]}).")
    arguments = json.dumps({"path": "src/config.py"})
    return Reply(tool_calls=(tool_use(("call_1", "read_file", arguments)),))


class TestOpenAICompatibleExample:
    def test_runs_against_a_server_given_by_environment(self) -> None:
        """With MELLEA_CTX_BASE_URL set, the example drives a real HTTP server through the SDK."""
        with OpenAIWireServer(agent) as server:
            env = {**os.environ, "MELLEA_CTX_BASE_URL": server.base_url, "MELLEA_CTX_MODEL": "m"}
            env.pop("OPENAI_API_KEY", None)
            done = subprocess.run(
                [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120
            )
            requests = server.requests
        assert done.returncode == 0, done.stderr
        assert "The retry limit is 5" in done.stdout
        offered = [t["function"]["name"] for t in requests[0].json["tools"]]
        assert offered == ["read_file", "compact_context", "recall"]
        assert requests[1].json["messages"][-1]["content"].startswith("RETRY_LIMIT = 5")
