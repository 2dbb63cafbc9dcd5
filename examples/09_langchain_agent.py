"""A LangChain v1 agent whose history our middleware compacts before every model call.

``create_agent`` runs a tool-calling loop; ``CompactionMiddleware`` runs a
``TokenBudgetCompactor`` on the agent's messages before each model call, so
the request stays under 2,500 tokens while the agent reads 30 files, and no
tool call is ever separated from its result. The model is LangChain's own
``GenericFakeChatModel`` playing a scripted agent, and the summary comes from
the offline ``ExtractiveBackend``, so nothing needs a key or a network.

Needs the ``langchain`` extra (``pip install '.[langchain]'`` in the clone). Run it:

    python examples/09_langchain_agent.py
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from mellea_ctx import ExtractiveBackend, TokenBudgetCompactor, default_counter
from mellea_ctx.integrations.langchain import CompactionMiddleware, from_langchain

BUDGET = 2_500
FILES = [f"src/module_{i:02d}.py" for i in range(30)]


class ScriptedAgentModel(GenericFakeChatModel):
    """LangChain's fake chat model; it records the size of each request it gets."""

    sizes: ClassVar[list[int]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedAgentModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        counter = default_counter()
        self.sizes.append(sum(counter.count(c) for c in from_langchain(messages)))
        return super()._generate(messages, *args, **kwargs)


def replies() -> Iterator[AIMessage]:
    for i, path in enumerate(FILES):
        yield AIMessage(
            f"Reading {path}.",
            tool_calls=[{"name": "read", "args": {"path": path}, "id": f"call_{i}"}],
        )
    yield AIMessage("Every module imports the retry policy from src/module_07.py.")


@tool
def read(path: str) -> str:
    """Read a source file."""
    return f"# {path}\nfrom src.module_07 import RETRY_POLICY\n" + "def handler(event): ...\n" * 40


def main() -> None:
    model = ScriptedAgentModel(messages=replies())
    compactor = TokenBudgetCompactor(
        max_tokens=BUDGET, keep_recent_tokens=800, boundary="model_step"
    )
    system_prompt = "You are a code reviewer. Read files with the read tool."
    middleware = CompactionMiddleware(
        compactor, backend=ExtractiveBackend(), system_prompt=system_prompt
    )
    agent = create_agent(model, tools=[read], system_prompt=system_prompt, middleware=[middleware])
    result = agent.invoke(
        {"messages": [HumanMessage("Which module do the others import?")]},
        {"recursion_limit": 100},
    )
    print(result["messages"][-1].content)
    print(f"{len(model.sizes)} model calls, largest request {max(model.sizes):,} tokens")
    assert max(model.sizes) <= BUDGET


if __name__ == "__main__":
    main()
