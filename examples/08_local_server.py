"""A local OpenAI-compatible server: vLLM, Ollama, llama.cpp, LM Studio, via ``base_url``.

A coding agent answers a question about a project with a ``read_file`` tool,
on whatever model the server hosts. ``OpenAIBackend(model, base_url=...)``
speaks Chat Completions to it; a local server needs no key. Summaries come
from the same model, behind a threshold so they are rare, and the model is
also offered ``compact_context`` and ``recall``. Point it at your server:

    # vLLM:       vllm serve Qwen/Qwen2.5-Coder-1.5B-Instruct     (http://127.0.0.1:8000/v1)
    # Ollama:     ollama serve; ollama pull qwen2.5-coder:1.5b   (http://127.0.0.1:11434/v1)
    # llama.cpp:  llama-server -m qwen2.5-coder-1.5b.gguf        (http://127.0.0.1:8080/v1)
    MELLEA_CTX_BASE_URL=http://127.0.0.1:8080/v1 MELLEA_CTX_MODEL=qwen2.5-coder \\
        python examples/08_local_server.py

Without ``MELLEA_CTX_BASE_URL`` it runs offline on ``ExtractiveBackend`` and says so.
"""

from __future__ import annotations

import os
import sys

from mellea_ctx import (
    Backend,
    ChatContext,
    Event,
    ExtractiveBackend,
    LLMSummarizeCompactor,
    MelleaCtxError,
    Message,
    OpenAIBackend,
    ThresholdCompactor,
    pin_react_initiator,
    react,
    tool,
)


@tool
def read_file(path: str) -> str:
    """Read a text file of the project.

    Args:
        path: The file's path, such as src/config.py.
    """
    files = {
        "src/config.py": "RETRY_LIMIT = 5\nTIMEOUT_SECONDS = 30\n",
        "src/client.py": "from config import RETRY_LIMIT\n\ndef fetch(url): ...\n",
    }
    return files.get(path, f"{path}: no such file")


def backend_from_environment() -> Backend:
    base_url = os.environ.get("MELLEA_CTX_BASE_URL")
    if not base_url:
        print("MELLEA_CTX_BASE_URL is not set: running offline on ExtractiveBackend.")
        return ExtractiveBackend()
    model = os.environ.get("MELLEA_CTX_MODEL", "qwen2.5-coder-1.5b-instruct")
    print(f"Using {model} at {base_url}.")
    return OpenAIBackend(model, base_url=base_url, timeout=300)


def main() -> None:
    backend = backend_from_environment()
    compactor = ThresholdCompactor(
        LLMSummarizeCompactor(
            keep_n=4, pin_predicate=pin_react_initiator, timeout=300, strict=True
        ),
        threshold=3_000,
    )
    events: list[Event] = []
    ctx = ChatContext().add(Message("system", "You are a coding agent. Use the tools."))
    result = react(
        'What is the retry limit? Read "src/config.py" to find out.',
        ctx,
        backend,
        tools=[read_file],
        compactor=compactor,
        loop_budget=6,
        model_options={"temperature": 0},
        on_event=events.append,
    )
    print(f"answer ({result.stopped} after {result.turns} turns): {result.answer}")
    print("events:", [e.kind for e in events])
    assert result.stopped == "answer" and "5" in (result.answer or "")
    assert "tool_called" in [e.kind for e in events]  # it read the file, not guessed


if __name__ == "__main__":
    try:
        main()
    except MelleaCtxError as exc:  # no reachable API, a refused key, a missing SDK
        first = str(exc).splitlines()[0] if str(exc) else ""
        sys.exit(f"08_local_server.py: {type(exc).__name__}: {first}")
