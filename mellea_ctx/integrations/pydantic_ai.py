"""pydantic-ai: a history processor that compacts an agent's messages with any of our compactors.

Needs ``pip install '.[pydantic-ai]'`` (``pydantic-ai-slim``). pydantic-ai 2.x
takes it as a capability, 1.x as a history processor::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from mellea_ctx import TokenBudgetCompactor
    from mellea_ctx.integrations.pydantic_ai import history_processor

    compact = history_processor(TokenBudgetCompactor(max_tokens=60_000), backend=backend)
    agent = Agent(model, capabilities=[ProcessHistory(compact)])   # 2.x
    agent = Agent(model, history_processors=[compact])             # 1.x

Each request part (system prompt, user prompt, tool return, retry prompt)
becomes one component and each model response one assistant output (its
thinking parts, text and tool calls together), so a tool call and its return
are kept or dropped together and a response's ``ThinkingPart``s stay with the
calls they preceded. What the compactor kept comes back as pydantic-ai's own
objects (a request that lost some parts is the same request with fewer
parts); a checkpoint comes back as a ``ModelRequest`` whose user prompt is
the summary as a ``TextContent``, which pydantic-ai replays, carrying the
checkpoint's record in that ``TextContent``'s ``metadata``: the one carrier
pydantic-ai keeps through its merging of consecutive requests and its JSON
round trip, so the next compaction folds it instead of summarizing it again.

The last request (what the model is about to answer: the user's prompt, or
the tool returns of the step before, with the response that called them) is
never offered to the compactor: it is counted against the budget and always
sent as it is, so the history is never empty and the current prompt is never
folded into a summary.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Literal, overload

from pydantic_ai import RunContext
from pydantic_ai import messages as pai

from mellea_ctx import (
    Backend,
    BaseBackend,
    ChatContext,
    Compactor,
    Component,
    Message,
    ModelOutputThunk,
    TokenCounter,
    Tool,
    ToolCall,
    ToolMessage,
    Usage,
    acompact_with,
    compact_with,
    component_from_record,
    component_to_record,
    default_counter,
)
from mellea_ctx._core.checks import require_choice, require_method
from mellea_ctx._core.operations import Operation, arun, run
from mellea_ctx._core.parts import OpaquePart, Part, TextPart, ThinkingPart

from ._runner import context_of, definitions_tokens, overhead

__all__ = ["ModelBackend", "history_processor"]

#: The ``TextContent.metadata`` key under which a checkpoint keeps its record (and the
#: ``ModelRequest.metadata`` key of histories saved before that, still read).
RECORD_KEY = "mellea_ctx"

#: Where each component came from: (index of the message, the part, or None for a whole response).
Origin = tuple[int, Any]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError):
        return str(content)


def _user(content: object) -> Message:
    if isinstance(content, str):
        return Message("user", content)
    parts: list[Part] = []
    for item in content if isinstance(content, Sequence) else [content]:
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif isinstance(item, pai.TextContent):
            parts.append(TextPart(item.content))
        else:  # images, documents, audio, video, cache points: shown as what they are
            kind = getattr(item, "kind", type(item).__name__)
            parts.append(OpaquePart("pydantic_ai", {"type": str(kind), "repr": repr(item)[:200]}))
    return Message("user", parts)


def _record_of(part: pai.UserPromptPart) -> dict[str, Any] | None:
    if isinstance(part.content, str):
        return None
    for item in part.content:
        if isinstance(item, pai.TextContent) and isinstance(item.metadata, dict):
            record = item.metadata.get(RECORD_KEY)
            if isinstance(record, dict):
                return record
    return None


def _request_part(part: Any) -> Component | None:
    if isinstance(part, pai.SystemPromptPart):
        return Message("system", part.content)
    if isinstance(part, pai.UserPromptPart):
        record = _record_of(part)
        return _user(part.content) if record is None else component_from_record(record)
    if isinstance(part, pai.ToolReturnPart):
        return ToolMessage(_text(part.content), tool_call_id=part.tool_call_id, name=part.tool_name)
    if isinstance(part, pai.RetryPromptPart):
        text = _text(part.content)
        if part.tool_name is not None:
            return ToolMessage(
                text, tool_call_id=part.tool_call_id, name=part.tool_name, is_error=True
            )
        return Message("user", text)
    return None  # instruction deltas and other bookkeeping parts ride with their request


def _response(message: pai.ModelResponse) -> ModelOutputThunk:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    for part in message.parts:
        if isinstance(part, pai.TextPart):
            parts.append(TextPart(part.content))
        elif isinstance(part, pai.ThinkingPart):
            parts.append(
                ThinkingPart(part.content, signature=part.signature, provider=part.provider_name)
            )
        elif isinstance(part, pai.ToolCallPart):
            calls.append(ToolCall(part.tool_call_id, part.tool_name, part.args_as_json_str()))
        else:  # server-side tool calls and returns, files: kept with the response, as they are
            kind = getattr(part, "part_kind", type(part).__name__)
            parts.append(OpaquePart("pydantic_ai", {"type": str(kind), "repr": repr(part)[:200]}))
    usage = None
    if message.usage.input_tokens or message.usage.output_tokens:  # what the provider reported
        usage = Usage(
            prompt_tokens=message.usage.input_tokens, completion_tokens=message.usage.output_tokens
        )
    return ModelOutputThunk(parts=parts, tool_calls=calls, usage=usage)


def _components(messages: Sequence[pai.ModelMessage]) -> list[tuple[Component, Origin]]:
    out: list[tuple[Component, Origin]] = []
    for index, message in enumerate(messages):
        if isinstance(message, pai.ModelResponse):
            out.append((_response(message), (index, None)))
            continue
        record = (message.metadata or {}).get(RECORD_KEY)
        if isinstance(record, dict):
            out.append((component_from_record(record), (index, None)))
            continue
        for part in message.parts:
            component = _request_part(part)
            if component is not None:
                out.append((component, (index, part)))
    return out


def _new_request(component: Component, run_id: str | None) -> pai.ModelRequest:
    text = pai.TextContent(component.content, metadata={RECORD_KEY: component_to_record(component)})
    return pai.ModelRequest(parts=[pai.UserPromptPart([text])], run_id=run_id)


def _rebuild(
    messages: Sequence[pai.ModelMessage],
    kept: list[Component],
    origins: dict[int, Origin],
    run_id: str | None = None,
) -> list[pai.ModelMessage]:
    out: list[pai.ModelMessage] = []
    groups: list[tuple[int, list[Any]]] = []  # request index, the request parts kept, in order
    for component in kept:
        origin = origins.get(id(component))
        if origin is None:
            out_index = len(groups)
            groups.append((-1 - out_index, [component]))
            continue
        index, part = origin
        if part is None:
            groups.append((index, []))
        elif groups and groups[-1][0] == index:
            groups[-1][1].append(part)
        else:
            groups.append((index, [part]))
    for index, parts in groups:
        if index < 0:
            out.append(_new_request(parts[0], run_id))
            continue
        message = messages[index]
        if isinstance(message, pai.ModelResponse) or not parts:
            out.append(message)
            continue
        modelled = [p for p in message.parts if _request_part(p) is not None]
        if modelled == parts:
            out.append(message)
        else:
            others = [p for p in message.parts if _request_part(p) is None]
            out.append(dataclasses.replace(message, parts=[*others, *parts]))
    return out


def _request_parts(component: Component) -> list[Any]:
    if isinstance(component, ToolMessage):
        return [
            pai.ToolReturnPart(
                component.name or "tool", component.content, tool_call_id=component.tool_call_id
            )
        ]
    if component.role in ("system", "developer"):
        return [pai.SystemPromptPart(component.content)]
    return [pai.UserPromptPart(component.content)]


def to_pydantic_ai(components: Sequence[Component]) -> list[pai.ModelMessage]:
    """Components as pydantic-ai messages, for a request (text, tool calls and returns).

    Consecutive request parts share one ``ModelRequest``; each assistant output
    is a ``ModelResponse`` with its text and tool calls.
    """
    out: list[pai.ModelMessage] = []
    for component in components:
        if component.role == "assistant":
            parts: list[Any] = [pai.TextPart(component.content)] if component.content else []
            parts += [
                pai.ToolCallPart(call.name, call.arguments, tool_call_id=call.id)
                for call in component.tool_calls
            ]
            out.append(pai.ModelResponse(parts=parts))
        elif out and isinstance(out[-1], pai.ModelRequest):
            out[-1] = pai.ModelRequest(parts=[*out[-1].parts, *_request_parts(component)])
        else:
            out.append(pai.ModelRequest(parts=_request_parts(component)))
    return out


class ModelBackend(BaseBackend):
    """A pydantic-ai model as our ``Backend``: the agent's own model can write the summaries.

    Each summary is one ``pydantic_ai.direct.model_request`` to ``model``
    (instrumented as pydantic-ai instruments its own calls, when it does).

    Args:
        model: A pydantic-ai ``Model``, or a model name (``"openai:gpt-4o"``).
        context_window: The model's input window in tokens; by default the
            model's own ``context_window`` when it knows one.

    Examples:
        >>> import asyncio
        >>> from pydantic_ai.models.test import TestModel
        >>> from mellea_ctx import Message
        >>> backend = ModelBackend(TestModel(custom_output_text="Short."))
        >>> asyncio.run(backend.generate([Message("user", "Summarize.")])).value
        'Short.'
    """

    def __init__(self, model: Any, *, context_window: int | None = None) -> None:
        if isinstance(model, str):
            from pydantic_ai.models import infer_model

            model = infer_model(model)
        self.model = model
        if context_window is None:
            window = getattr(model, "context_window", None)
            context_window = window if isinstance(window, int) else None
        self.context_window = context_window

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Return the model's answer to ``messages`` (``options`` are the model's own)."""
        from pydantic_ai.direct import model_request
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.tools import ToolDefinition

        definitions = [
            ToolDefinition(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in tools
        ]
        response = await model_request(
            self.model,
            to_pydantic_ai(messages),
            model_request_parameters=ModelRequestParameters(function_tools=definitions),
        )
        return _response(response)

    def __repr__(self) -> str:
        return f"ModelBackend({type(self.model).__name__})"


def _check(compactor: object) -> None:
    fix = "pass one of mellea_ctx's compactors"
    require_method("history_processor", "compactor", compactor, "compact()", fix=fix)


def _tail_start(messages: Sequence[pai.ModelMessage]) -> int:
    """Where the request the model is about to answer starts (with the response it answers)."""
    if not messages or not isinstance(messages[-1], pai.ModelRequest):
        return len(messages)
    start = len(messages) - 1
    answers = any(
        isinstance(p, pai.ToolReturnPart | pai.RetryPromptPart) for p in messages[start].parts
    )
    if answers and start > 0 and isinstance(messages[start - 1], pai.ModelResponse):
        start -= 1
    return start


def _tools_tokens(ctx: RunContext[Any] | None) -> int:
    """What the run step's tool definitions add to the request (``0`` outside a run)."""
    manager = getattr(ctx, "tool_manager", None)
    try:
        defs = list(manager.tool_defs) if manager is not None else []
    except ValueError:  # not prepared for a run step yet
        defs = []
    return definitions_tokens((d.name, d.description or "", d.parameters_json_schema) for d in defs)


def _own_run(messages: Sequence[pai.ModelMessage], kept: set[int], run_id: str | None) -> bool:
    """Whether the compaction replaced a message of the current run (so its checkpoint is new)."""
    return run_id is not None and any(
        getattr(m, "run_id", None) == run_id for i, m in enumerate(messages) if i not in kept
    )


Processor = Callable[[RunContext[Any], list[pai.ModelMessage]], list[pai.ModelMessage]]
AsyncProcessor = Callable[
    [RunContext[Any], list[pai.ModelMessage]], Awaitable[list[pai.ModelMessage]]
]


@overload
def history_processor(
    compactor: Compactor,
    *,
    backend: Backend | None = ...,
    counter: TokenCounter | None = ...,
    mode: Literal["async"] = ...,
) -> AsyncProcessor: ...


@overload
def history_processor(
    compactor: Compactor,
    *,
    backend: Backend | None = ...,
    counter: TokenCounter | None = ...,
    mode: Literal["sync"],
) -> Processor: ...


def history_processor(
    compactor: Compactor,
    *,
    backend: Backend | None = None,
    counter: TokenCounter | None = None,
    mode: Literal["async", "sync"] = "async",
) -> Processor | AsyncProcessor:
    """Return a pydantic-ai history processor that compacts with ``compactor``.

    The processor takes pydantic-ai's ``RunContext`` (pydantic-ai passes it to
    a processor whose first parameter is one): a checkpoint that replaced
    messages of the current run is tagged with ``ctx.run_id``, so
    ``result.new_messages()`` keeps it, and the tool definitions of the run
    step count against the budget. Called outside a run, pass ``None``.

    Args:
        compactor: Any of our compactors.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).
        mode: ``"async"`` (the default; awaits ``acompact``) or ``"sync"``.

    Returns:
        A function ``(ctx, messages)`` to the compacted list; the list it is
        given is not modified.

    Raises:
        InvalidArgumentError: For a compactor without ``compact`` or an unknown ``mode``.

    Examples:
        >>> from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
        >>> from mellea_ctx import WindowCompactor
        >>> compact = history_processor(WindowCompactor(size=1), mode="sync")
        >>> history = [ModelRequest([UserPromptPart("hi")]), ModelResponse([TextPart("yo")]),
        ...            ModelRequest([UserPromptPart("and now?")])]
        >>> compact(None, history) == history[1:]  # the last request is always kept
        True
    """
    _check(compactor)
    require_choice("history_processor", "mode", mode, ("async", "sync"))
    count = counter or default_counter()

    def processing(
        ctx: RunContext[Any] | None, messages: list[pai.ModelMessage]
    ) -> Operation[ChatContext, list[pai.ModelMessage]]:
        """Both processors' work: it yields the context to compact and is sent the result."""
        pairs = _components(messages)
        start = _tail_start(messages)
        body = [c for c, (index, _) in pairs if index < start]
        tail = [c for c, (index, _) in pairs if index >= start]
        if not body:
            return messages
        origins = {id(component): origin for component, origin in pairs}
        extra = _tools_tokens(ctx) + sum(count.count(c) for c in tail)
        before = context_of(body, counter)
        with overhead(extra):
            compacted: ChatContext = yield before
        if compacted is before:
            return messages
        kept = [*compacted.as_list(), *tail]
        kept_indices = {origins[id(c)][0] for c in kept if id(c) in origins}
        run_id = getattr(ctx, "run_id", None)
        tag = run_id if _own_run(messages, kept_indices, run_id) else None
        return _rebuild(messages, kept, origins, tag)

    def sync_processor(
        ctx: RunContext[Any], messages: list[pai.ModelMessage]
    ) -> list[pai.ModelMessage]:
        return run(processing(ctx, messages), partial(compact_with, compactor, backend=backend))

    async def async_processor(
        ctx: RunContext[Any], messages: list[pai.ModelMessage]
    ) -> list[pai.ModelMessage]:
        compact = partial(acompact_with, compactor, backend=backend)
        return await arun(processing(ctx, messages), compact)

    return sync_processor if mode == "sync" else async_processor
