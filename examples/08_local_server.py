"""The same agent against any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp.

Point it at a server with environment variables:

    MELLEA_CTX_BASE_URL=http://127.0.0.1:8080/v1 MELLEA_CTX_MODEL=qwen2.5-coder \\
        python examples/react_openai_compatible.py

(``OPENAI_API_KEY`` is read too; a local server needs none.) Summaries come
from the same model, behind a threshold so they are rare. Without
``MELLEA_CTX_BASE_URL`` it runs offline on ``ExtractiveBackend`` and says so.
"""

from __future__ import annotations

import os

from mellea_ctx import (
    Backend,
    ChatContext,
    Event,
    ExtractiveBackend,
    LLMSummarizeCompactor,
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
        LLMSummarizeCompactor(keep_n=4, pin_predicate=pin_react_initiator, timeout=300),
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
    assert result.stopped == "answer" and result.answer


if __name__ == "__main__":
    main()
