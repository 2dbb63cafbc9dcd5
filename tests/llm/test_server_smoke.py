"""The local server answers one real chat completion through the official OpenAI SDK."""

from __future__ import annotations

import time

import pytest

openai = pytest.importorskip("openai", reason="the openai SDK is not installed; run `nox -s llm`")

pytestmark = pytest.mark.llm


def test_one_short_chat_completion(
    llama_server: str, llama_model_name: str, llm_report: dict[str, str]
) -> None:
    """One short completion comes back with text and token usage."""
    with openai.OpenAI(
        base_url=llama_server, api_key="unused", timeout=120.0, max_retries=0
    ) as client:
        started = time.perf_counter()
        completion = client.chat.completions.create(
            model=llama_model_name,
            messages=[
                {"role": "user", "content": "In one sentence: what is a context window?"},
            ],
            max_tokens=24,
            temperature=0.0,
        )
        elapsed = time.perf_counter() - started

    text = completion.choices[0].message.content
    usage = completion.usage
    llm_report["completion"] = f"{elapsed:.1f} s, usage {usage}"
    llm_report["completion text"] = repr(text)
    assert text is not None and text.strip()
    assert usage is not None
    assert usage.prompt_tokens > 0
    assert 0 < usage.completion_tokens <= 24
