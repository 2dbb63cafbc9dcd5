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
parts); a checkpoint comes back as a ``ModelRequest`` with the summary as a
user prompt, which pydantic-ai replays, and carries its record in
``metadata`` so the next compaction folds it instead of summarizing it again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, overload

from pydantic_ai import messages as pai

from mellea_ctx import (
    Backend,
    Compactor,
    Component,
    InvalidArgumentError,
    Message,
    ModelOutputThunk,
    TokenCounter,
    ToolCall,
    ToolMessage,
    component_from_record,
    component_to_record,
)
from mellea_ctx._core.parts import OpaquePart, Part, TextPart, ThinkingPart

from ._runner import context_of

__all__ = ["history_processor"]

#: The ``ModelRequest.metadata`` key under which a checkpoint keeps its record.
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
        else:  # images, documents, audio, video, cache points: shown as what they are
            kind = getattr(item, "kind", type(item).__name__)
            parts.append(OpaquePart("pydantic_ai", {"type": str(kind), "repr": repr(item)[:200]}))
    return Message("user", parts)


def _request_part(part: Any) -> Component | None:
    if isinstance(part, pai.SystemPromptPart):
        return Message("system", part.content)
    if isinstance(part, pai.UserPromptPart):
        return _user(part.content)
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
    return ModelOutputThunk(parts=parts, tool_calls=calls)


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


def _new_request(component: Component) -> pai.ModelRequest:
    metadata = {RECORD_KEY: component_to_record(component)}
    return pai.ModelRequest(parts=[pai.UserPromptPart(component.content)], metadata=metadata)


def _rebuild(
    messages: Sequence[pai.ModelMessage],
    kept: list[Component],
    origins: dict[int, Origin],
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
            out.append(_new_request(parts[0]))
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


def _check(compactor: object) -> None:
    if not callable(getattr(compactor, "compact", None)):
        msg = (
            f"history_processor: compactor={compactor!r} has no compact method; "
            "pass one of mellea_ctx's compactors"
        )
        raise InvalidArgumentError(msg)


Processor = Callable[[list[pai.ModelMessage]], list[pai.ModelMessage]]
AsyncProcessor = Callable[[list[pai.ModelMessage]], Awaitable[list[pai.ModelMessage]]]


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

    Args:
        compactor: Any of our compactors.
        backend: The backend a summarizing compactor calls.
        counter: The token counter (the default ``o200k_base`` one if ``None``).
        mode: ``"async"`` (the default; awaits ``acompact``) or ``"sync"``.

    Returns:
        A function from pydantic-ai's message list to the compacted list; the
        list it is given is not modified.

    Raises:
        InvalidArgumentError: For a compactor without ``compact`` or an unknown ``mode``.

    Examples:
        >>> from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
        >>> from mellea_ctx import WindowCompactor
        >>> compact = history_processor(WindowCompactor(size=1), mode="sync")
        >>> history = [ModelRequest([UserPromptPart("hi")]), ModelResponse([TextPart("yo")])]
        >>> compact(history) == history[1:]
        True
    """
    _check(compactor)
    if mode not in ("async", "sync"):
        msg = f"history_processor: mode={mode!r} must be 'async' or 'sync'"
        raise InvalidArgumentError(msg)

    def prepare(messages: list[pai.ModelMessage]) -> tuple[Any, dict[int, Origin]]:
        pairs = _components(messages)
        origins = {id(component): origin for component, origin in pairs}
        return context_of([component for component, _ in pairs], counter), origins

    def sync_processor(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        ctx, origins = prepare(messages)
        compacted = compactor.compact(ctx, backend=backend)
        if compacted is ctx:
            return messages
        return _rebuild(messages, compacted.as_list(), origins)

    async def async_processor(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        ctx, origins = prepare(messages)
        acompact = getattr(compactor, "acompact", None)
        if acompact is None:
            compacted = compactor.compact(ctx, backend=backend)
        else:
            compacted = await acompact(ctx, backend=backend)
        if compacted is ctx:
            return messages
        return _rebuild(messages, compacted.as_list(), origins)

    return sync_processor if mode == "sync" else async_processor
