"""``mellea-ctx compact --summarize`` with a model backend, over loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mellea_ctx import from_openai, validate_openai
from mellea_ctx._cli.app import cli

from .anthropic_server import AnthropicWireServer
from .openai_server import OpenAIWireServer

SUMMARY = "The customer Omar Davis asked to change reservation flights; the agent searched flights."


def run(*argv: str, env: dict[str, str | None]) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, list(argv), env={"COLUMNS": "200", **env})
    return done.exit_code, done.stdout, done.stderr


class TestSummarizeOverHTTP:
    def test_openai_backend(self, openai_server: OpenAIWireServer, tmp_path: Path) -> None:
        """--backend openai sends the span to the server and writes its summary as a checkpoint."""
        openai_server.reply(SUMMARY, usage=(3_000, 40))
        out = tmp_path / "out.json"
        code, stdout, stderr = run(
            "compact",
            "--summarize",
            "--keep",
            "4",
            "--backend",
            "openai",
            "--model",
            "m-1",
            "--base-url",
            openai_server.base_url,
            "-o",
            str(out),
            env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None},
        )
        assert (0, "") == (code, stdout), stderr
        (request,) = openai_server.requests
        assert "m-1" == request.json["model"]
        assert "Airline Agent Policy" not in json.dumps(request.json["messages"])  # pinned
        written = json.loads(out.read_text(encoding="utf-8"))
        assert SUMMARY in written[1]["content"]
        assert [] == validate_openai(from_openai(written))
        assert "added              1 checkpoint" in stderr

    def test_failure_writes_nothing(self, openai_server: OpenAIWireServer, tmp_path: Path) -> None:
        """A server that fails: status 1, one error line, OUT untouched."""
        for _ in range(3):  # the compactor retries retryable errors twice
            openai_server.fail(400)
        out = tmp_path / "out.json"
        out.write_text("precious", encoding="utf-8")
        code, stdout, stderr = run(
            "compact",
            "--summarize",
            "--backend",
            "openai",
            "--base-url",
            openai_server.base_url,
            "-o",
            str(out),
            env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None},
        )
        assert (1, "") == (code, stdout)
        assert stderr.splitlines()[-1].startswith(
            "mellea-ctx: error: the summary failed, nothing was written:"
        )
        assert "precious" == out.read_text(encoding="utf-8")

    def test_anthropic_backend(self, anthropic_server: AnthropicWireServer, tmp_path: Path) -> None:
        """--backend anthropic reads ANTHROPIC_API_KEY and writes the server's summary."""
        anthropic_server.reply(SUMMARY, usage=(3_000, 40))
        out = tmp_path / "out.json"
        code, _, stderr = run(
            "compact",
            "--summarize",
            "--backend",
            "anthropic",
            "--base-url",
            anthropic_server.base_url,
            "-o",
            str(out),
            env={"ANTHROPIC_API_KEY": "test"},
        )
        assert 0 == code, stderr
        assert SUMMARY in json.loads(out.read_text(encoding="utf-8"))[1]["content"]
        assert "claude-sonnet-4-6" == anthropic_server.requests[0].json["model"]
