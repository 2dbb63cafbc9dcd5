"""LangChain and LangGraph: message conversion, an agent middleware, a ``trim_messages`` drop-in.

Needs ``pip install '.[langchain]'`` (``langchain`` 1.x and ``langchain-core``).

- :func:`from_langchain` / :func:`to_langchain` convert between LangChain
  messages and components without loss: every field LangChain holds that we
  do not model (``id``, ``additional_kwargs``, ``response_metadata``,
  ``usage_metadata``, a tool message's ``artifact`` and ``status``, ...) rides
  in the component's ``extra`` and comes back as it was; content blocks become
  typed parts (``thinking`` and ``reasoning`` blocks become
  :class:`~mellea_ctx.ThinkingPart`, other blocks are carried verbatim).
- :class:`CompactionMiddleware` runs any of our compactors before each model
  call of a LangChain v1 agent (``create_agent(..., middleware=[...])``).
- :func:`compact_messages` does the same for a plain list, where you would
  call ``trim_messages``.

Both hand back LangChain's own message objects for everything the compactor
kept, so nothing is rebuilt that the compactor did not change, and a tool call
is never separated from its result. A checkpoint travels as a
``HumanMessage`` that carries its full record in ``additional_kwargs``, so it
is read back as a checkpoint (folded, not re-summarized) and can still hand
back what it replaced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from mellea_ctx import (
    Backend,
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
    BaseBackend,
    ClearedToolResult,
    Compactor,
    Component,
    InvalidArgumentError,
    InvalidContextError,
    MalformedResponseError,
    Message,
    ModelOutputThunk,
    RateLimitError,
    RequestRejectedError,
    ServerError,
    TokenCounter,
    ToolCall,
    Usage,
    component_from_record,
    component_to_record,
    from_openai,
    to_openai,
)
from mellea_ctx import ContextOverflowError as WindowOverflow
from mellea_ctx import ToolMessage as ToolResult
from mellea_ctx._core import parts
from mellea_ctx._core.checks import require_int, require_method
from mellea_ctx._core.tools import Tool

from ._runner import PairCompaction, definitions_tokens

__all__ = [
    "ChatModelBackend",
    "CompactionMiddleware",
    "MessagesCounter",
    "as_runnable",
    "compact_messages",
    "from_langchain",
    "to_langchain",
    "token_counter",
    "tools_tokens",
    "trim_to_tokens",
]

#: The ``additional_kwargs`` key under which a component LangChain has no type for
#: (a checkpoint, an agent goal) keeps its lossless record.
RECORD_KEY = "mellea_ctx"
_SOURCE = {"lc_source": "mellea_ctx"}
#: Fields of each message class that components model; the rest go to ``extra``.
_MODELLED = {"content", "tool_calls", "tool_call_id", "name", "type", "status"}


def _fail(index: int, what: str, fix: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"from_langchain: message {index}: {what}; {fix}")


def _block_part(block: object) -> parts.Part:
    if isinstance(block, str):  # LangChain allows bare strings in a content list
        return parts.TextPart(block, extra={"langchain_str": True})
    if not isinstance(block, dict):
        return parts.OpaquePart("langchain", {"value": block})
    kind = block.get("type")
    read = _BLOCK_READERS.get(kind) if isinstance(kind, str) else None
    part = read(block) if read is not None else None
    return parts.OpaquePart("langchain", block) if part is None else part


def _rest(block: dict[str, Any], *known: str) -> dict[str, Any]:
    """The keys of ``block`` a part keeps as its ``extra``: all but ``type`` and ``known``."""
    return {k: v for k, v in block.items() if k != "type" and k not in known}


def _text_block(block: dict[str, Any]) -> parts.Part | None:
    if not isinstance(block.get("text"), str):
        return None
    return parts.TextPart(block["text"], extra=_rest(block, "text", "thinking", "signature"))


def _thinking_block(block: dict[str, Any]) -> parts.Part | None:
    signature = block.get("signature")
    if not isinstance(block.get("thinking"), str) or not (
        signature is None or isinstance(signature, str)
    ):
        return None
    extra = _rest(block, "text", "thinking", "signature")
    return parts.ThinkingPart(
        block["thinking"], signature=signature, provider="anthropic", extra=extra
    )


def _reasoning_block(block: dict[str, Any]) -> parts.Part | None:
    if not isinstance(block.get("reasoning"), str):
        return None
    return parts.ThinkingPart(
        block["reasoning"], provider="langchain", extra=_rest(block, "reasoning")
    )


def _image_block(block: dict[str, Any]) -> parts.Part | None:
    if not isinstance(block.get("image_url"), dict):
        return None
    # OpenAI's block, as LangChain carries it: read by the OpenAI reader, so the
    # summarizer sees the image (and its URL) as it sees any ImagePart.
    try:
        (part,) = from_openai([{"role": "user", "content": [block]}])[0].parts
    except (InvalidArgumentError, InvalidContextError, ValueError):
        return None
    return part


#: The readers of the LangChain blocks we model, by ``type``; any other block is opaque.
_BLOCK_READERS: dict[str, Callable[[dict[str, Any]], parts.Part | None]] = {
    "text": _text_block,
    "thinking": _thinking_block,
    "reasoning": _reasoning_block,
    "image_url": _image_block,
}


def _block_of(part: parts.Part) -> object:
    extra = parts.thaw_json(part.extra) if hasattr(part, "extra") else {}
    match part:
        case parts.TextPart():
            if extra.get("langchain_str") is True and len(extra) == 1:
                return part.text
            return {"type": "text", "text": part.text, **extra}
        case parts.ThinkingPart():
            if part.provider == "langchain":
                return {"type": "reasoning", "reasoning": part.text, **extra}
            block = {"type": "thinking", "thinking": part.text}
            if part.signature is not None:
                block["signature"] = part.signature
            return {**block, **extra}
        case parts.OpaquePart():
            block = parts.thaw_json(part.block)
            if part.provider == "langchain" and set(block) == {"value"}:
                return block["value"]
            return block
        case parts.RedactedThinkingPart():
            return {"type": "redacted_thinking", "data": part.data, **extra}
        case parts.ImagePart(url=None, data=None):  # a provider's file: LangChain's image block
            return _data_block("image", file_id=part.file_id, mime_type=part.media_type)
        case parts.ImagePart():
            return to_openai([Message("user", [part])])[0]["content"][0]
        case parts.RefusalPart():
            return {"type": "refusal", "refusal": part.text, **extra}
        case parts.DocumentPart(text=str() as text):
            mime = part.media_type or "text/plain"
            return _data_block("text-plain", text=text, mime_type=mime, title=part.name)
        case parts.DocumentPart():
            extras = {"filename": part.name} if part.name is not None else None
            return _data_block(
                "file",
                base64=part.data,
                url=part.url,
                file_id=part.file_id,
                mime_type=part.media_type,
                extras=extras,
            )
        case parts.AudioPart():
            audio_mime = f"audio/{part.format}" if part.format is not None else None
            return _data_block("audio", base64=part.data, id=part.id, mime_type=audio_mime)
        case _:
            parts.assert_never(part)


def _data_block(kind: str, **fields: object) -> dict[str, Any]:
    """LangChain's standard block of ``kind`` (langchain_core.messages.content), set keys only."""
    return {"type": kind, **{key: value for key, value in fields.items() if value is not None}}


def _content(message: BaseMessage) -> tuple[Any, bool]:
    content = message.content
    if isinstance(content, str):
        return content, False
    return tuple(_block_part(block) for block in content), True


def _content_of(component: Component) -> str | list[Any]:
    if not component.structured:
        return component.content
    return [_block_of(part) for part in component.parts]


def _extra(message: BaseMessage, index: int) -> dict[str, Any]:
    dumped = message.model_dump(exclude_defaults=True)
    extra = {k: v for k, v in dumped.items() if k not in _MODELLED}
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _fail(
            index,
            f"a field is not JSON ({exc})",
            "use CompactionMiddleware or compact_messages, which hand back your own message "
            "objects, or keep only JSON values in the message's fields",
        ) from exc
    return extra


#: What LangChain's ``ContextEditingMiddleware`` writes in a cleared ``ToolMessage``'s
#: ``response_metadata``; ours writes the same, so code that looks for it finds ours.
CLEARED_MARK = {"cleared": True, "strategy": "clear_tool_uses"}


def _cleared_from(message: ToolMessage, record: dict[str, Any], index: int) -> Component:
    original = component_from_record(record["original"])
    if not isinstance(original, ToolResult):
        raise _fail(index, "a cleared tool result's record holds no tool result", "restore it")
    cleared = ClearedToolResult(
        message.content if isinstance(message.content, str) else json.dumps(message.content),
        tool_call_id=message.tool_call_id,
        name=message.name,
        is_error=message.status == "error",
        original=original,
        removed_tokens=int(record.get("removed_tokens", 0)),
    )
    return attrs.evolve(cleared, extra=_extra(message, index))


def _to_cleared(component: ClearedToolResult) -> ToolMessage:
    """The cleared result as LangChain's context editing writes one, plus its record."""
    base = parts.thaw_json(component.extra) or parts.thaw_json(component.original.extra)
    base.pop("artifact", None)
    kwargs = dict(base.pop("additional_kwargs", None) or {})
    kwargs[RECORD_KEY] = {
        "kind": "cleared",
        "original": component_to_record(component.original),
        "removed_tokens": component.removed_tokens,
    }
    metadata = {**(base.pop("response_metadata", None) or {}), "context_editing": CLEARED_MARK}
    status = "error" if component.is_error else "success"
    return ToolMessage(
        component.content,
        tool_call_id=component.tool_call_id,
        name=component.name,
        status=status,
        additional_kwargs=kwargs,
        response_metadata=metadata,
        **base,
    )


def _from_one(message: BaseMessage, index: int) -> Component:
    kwargs = message.additional_kwargs
    record = kwargs.get(RECORD_KEY) if isinstance(kwargs, dict) else None
    if isinstance(record, dict) and record.get("kind") == "cleared":
        if isinstance(message, ToolMessage):
            return _cleared_from(message, record, index)
    elif isinstance(record, dict):
        return component_from_record(record)
    content, structured = _content(message)
    extra = _extra(message, index)
    if isinstance(message, SystemMessage):
        return Message("system", content, name=message.name, extra=extra, structured=structured)
    if isinstance(message, HumanMessage):
        return Message("user", content, name=message.name, extra=extra, structured=structured)
    if isinstance(message, AIMessage):
        calls = []
        for call in message.tool_calls:
            call_id = call.get("id")
            if not call_id:
                raise _fail(index, f"tool call {call.get('name')!r} has no id", "give it an id")
            calls.append(ToolCall(call_id, call["name"], json.dumps(call.get("args", {}))))
        usage = None
        meta = message.usage_metadata
        if meta:
            usage = Usage(
                prompt_tokens=meta["input_tokens"], completion_tokens=meta["output_tokens"]
            )
        if message.name is not None:
            extra["name"] = message.name
        if structured:
            return ModelOutputThunk(
                parts=content, tool_calls=calls, usage=usage, extra=extra, structured=True
            )
        return ModelOutputThunk(content or None, tool_calls=calls, usage=usage, extra=extra)
    if isinstance(message, ToolMessage):
        return ToolResult(
            content,
            tool_call_id=message.tool_call_id,
            name=message.name,
            is_error=message.status == "error",
            extra=extra,
            structured=structured,
        )
    raise _fail(
        index,
        f"{type(message).__name__} has no component kind",
        "pass system, human, AI and tool messages",
    )


def from_langchain(messages: Iterable[BaseMessage]) -> list[Component]:
    """Convert LangChain messages to components, losing nothing.

    Raises:
        InvalidArgumentError: For a message kind with no component (``ChatMessage``,
            ``FunctionMessage``), a tool call without an id, or a field that is not
            JSON (a tool message's ``artifact`` object, say).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from_langchain([HumanMessage("hi", id="m1")])[0].content
        'hi'
    """
    out = []
    for index, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise _fail(
                index, f"{type(message).__name__} is not a LangChain message", "pass messages"
            )
        out.append(_from_one(message, index))
    return out


def _to_one(component: Component) -> BaseMessage:
    if isinstance(component, ClearedToolResult):
        return _to_cleared(component)
    extra = parts.thaw_json(component.extra)
    content = _content_of(component)
    name = component.name
    if isinstance(component, ToolResult):
        status = "error" if component.is_error else "success"
        return ToolMessage(
            content, tool_call_id=component.tool_call_id, name=name, status=status, **extra
        )
    if isinstance(component, ModelOutputThunk) or (
        isinstance(component, Message) and component.role == "assistant"
    ):
        calls = [
            {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
            for c in component.tool_calls
        ]
        return AIMessage(content, tool_calls=calls, **({"name": name} if name else {}), **extra)
    if isinstance(component, Message) and component.role in ("system", "developer"):
        if component.role == "developer":
            extra.setdefault("additional_kwargs", {})["__openai_role__"] = "developer"
        return SystemMessage(content, name=name, **extra)
    if type(component) is Message:
        return HumanMessage(content, name=name, **extra)
    record = {**_SOURCE, RECORD_KEY: component_to_record(component)}
    return HumanMessage(component.content, additional_kwargs=record)


def to_langchain(components: Iterable[Component]) -> list[BaseMessage]:
    """Convert components to LangChain messages; the inverse of :func:`from_langchain`.

    A checkpoint or an agent goal becomes a ``HumanMessage`` with its text,
    carrying its record in ``additional_kwargs["mellea_ctx"]`` so that
    :func:`from_langchain` reads it back as what it was.

    Examples:
        >>> from mellea_ctx import Message
        >>> to_langchain([Message("user", "hi")])[0].content
        'hi'
    """
    return [_to_one(component) for component in components]


@attrs.define(frozen=True, slots=True)
class MessagesCounter:
    """One of LangChain's token counters (a function over message lists) as our ``TokenCounter``.

    Each component is counted as the one LangChain message it is.
    """

    count_messages: Callable[[list[BaseMessage]], int]

    def count(self, component: Component) -> int:
        """Return the tokens LangChain's counter gives ``component`` as one message."""
        return int(self.count_messages([_to_one(component)]))


def token_counter(counter: object) -> TokenCounter | None:
    """Our counter for ``counter``: ours, or any token counter LangChain takes.

    Accepts ``None`` (our default), one of our ``TokenCounter``s, ``"approximate"``
    (LangChain's ``count_tokens_approximately``), a chat model (its
    ``get_num_tokens_from_messages``) or a function over message lists.

    Raises:
        InvalidArgumentError: For anything else (``{}``, ``"exact"``, ...).
    """
    if counter is None:
        return None
    if isinstance(counter, str):
        if counter == "approximate":
            from langchain_core.messages.utils import count_tokens_approximately

            return MessagesCounter(count_tokens_approximately)
    elif not isinstance(counter, list | tuple | dict | bytes):
        if callable(getattr(counter, "count", None)):
            return counter  # type: ignore[return-value]
        by_model = getattr(counter, "get_num_tokens_from_messages", None)
        if callable(by_model):
            return MessagesCounter(by_model)
        if callable(counter):
            return MessagesCounter(counter)
    msg = (
        f"counter={counter!r} is not a token counter; pass None (the default o200k_base "
        "counter), one of mellea_ctx's counters, 'approximate', a chat model, or a function "
        "from a list of messages to a token count"
    )
    raise InvalidArgumentError(msg)


def tools_tokens(tools: Sequence[Any]) -> int:
    """What the schemas of ``tools`` add to each request, read as LangChain binds them.

    Examples:
        >>> tools_tokens([]) == 0
        True
    """
    if not tools:
        return 0
    from langchain_core.utils.function_calling import convert_to_openai_tool

    definitions = []
    for item in tools:
        function = convert_to_openai_tool(item).get("function", {})
        definitions.append(
            (function.get("name", ""), function.get("description", ""), function.get("parameters"))
        )
    return definitions_tokens(definitions)


def _pairs(messages: Sequence[BaseMessage]) -> list[tuple[Component, BaseMessage]]:
    return list(zip(from_langchain(messages), messages, strict=True))


def compact_messages(
    messages: Sequence[BaseMessage],
    compactor: Compactor,
    *,
    backend: Backend | None = None,
    counter: TokenCounter | Any = None,
) -> list[BaseMessage]:
    """Compact LangChain messages with any compactor: where you would call ``trim_messages``.

    Returns a new list; ``messages`` is not modified. Kept messages are the
    very same objects; a tool call and its results are kept or dropped together,
    and after a compaction no tool message that answers no call is left (one
    already orphaned in ``messages`` is dropped). ``counter`` is ours or any
    token counter LangChain takes (see :func:`token_counter`).

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from mellea_ctx import WindowCompactor
        >>> history = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
        >>> [m.content for m in compact_messages(history, WindowCompactor(size=1))]
        ['c']
    """
    compaction = PairCompaction(
        compactor, _to_one, backend=backend, counter=token_counter(counter), repair="openai"
    )
    out = compaction.run(_pairs(messages))
    return list(messages) if out is None else out


def _mapped(exc: Exception) -> BackendError | None:
    """Our error for one of langchain-core's model errors (``None`` for anything else)."""
    from langchain_core import exceptions as lc

    text = str(exc) or type(exc).__name__
    if isinstance(exc, lc.ContextOverflowError):
        return WindowOverflow(text)
    if isinstance(exc, lc.ModelRateLimitError):
        return RateLimitError(text)
    if isinstance(exc, lc.ModelTimeoutError):
        return BackendTimeoutError(text)
    if isinstance(exc, lc.ModelConnectionError):
        return BackendConnectionError(text)
    if isinstance(
        exc,
        lc.ModelInvalidRequestError
        | lc.ModelAuthenticationError
        | lc.ModelPermissionDeniedError
        | lc.ModelNotFoundError,
    ):
        return RequestRejectedError(text)
    if isinstance(exc, lc.ModelAPIError):
        return ServerError(text)
    return None


def trim_to_tokens(
    messages: Sequence[BaseMessage],
    max_tokens: int,
    *,
    counter: TokenCounter | Any = None,
) -> list[BaseMessage]:
    """Drop the oldest messages until the rest fit ``max_tokens``: ``trim_messages``, drop-only.

    What ``trim_messages(messages, max_tokens=..., strategy="last",
    include_system=True)`` does, with our guarantees: the system prompt is
    kept, a tool call is never separated from its results, and the kept
    messages are your own objects. The newest messages kept are the most that
    fit (a :class:`~mellea_ctx.WindowCompactor` as wide as the budget allows);
    when not even the last message fits, only the system prompt comes back
    (``trim_messages`` does the same). Returns a new list; ``messages`` is not
    modified.

    Raises:
        InvalidArgumentError: For ``max_tokens`` that is not an int >= 0.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> history = [HumanMessage("a " * 50), AIMessage("b " * 50), HumanMessage("c")]
        >>> [m.content for m in trim_to_tokens(history, 60)]
        ['b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b ', 'c']
    """  # noqa: E501
    require_int("trim_to_tokens", "max_tokens", max_tokens)
    from mellea_ctx import WindowCompactor, default_counter

    count = token_counter(counter) or default_counter()

    def size_of(kept: Sequence[BaseMessage]) -> int:
        return sum(count.count(c) for c in from_langchain(kept))

    def window(size: int) -> list[BaseMessage]:
        return compact_messages(messages, WindowCompactor(size=size), counter=count)

    if size_of(messages) <= max_tokens:
        return list(messages)
    low, high = 0, len(messages)  # window(low) is the floor; find the widest that fits
    best = window(0)
    while low < high:
        middle = (low + high + 1) // 2
        kept = window(middle)
        if size_of(kept) <= max_tokens:
            low, best = middle, kept
        else:
            high = middle - 1
    return best


def as_runnable(compactor: Compactor, **options: Any) -> Any:
    """``compact_messages`` with ``compactor`` as a LangChain ``Runnable``, as ``trim_messages`` is.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from mellea_ctx import WindowCompactor
        >>> trimmer = as_runnable(WindowCompactor(size=1))
        >>> [m.content for m in trimmer.invoke([HumanMessage("a"), HumanMessage("b")])]
        ['b']
    """
    from langchain_core.runnables import RunnableLambda

    def run(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        return compact_messages(messages, compactor, **options)

    return RunnableLambda(run, name="compact_messages")


class ChatModelBackend(BaseBackend):
    """A LangChain chat model as our ``Backend``: the agent's own model can write the summaries.

    Its calls run through LangChain (``ainvoke``), so inside an agent run they
    are child runs that LangChain callbacks and LangSmith see. langchain-core's
    model errors are mapped to ours at the call (its ``ContextOverflowError``
    to ours, so an overflowing summary is made again in a smaller window).

    Args:
        model: A chat model, or a ``"provider:model"`` string for LangChain's
            ``init_chat_model``.
        context_window: The model's input window in tokens; by default its
            profile's ``max_input_tokens`` when it publishes one.

    Raises:
        InvalidArgumentError: For a ``model`` that is neither.

    Examples:
        >>> import asyncio
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from mellea_ctx import Message
        >>> backend = ChatModelBackend(GenericFakeChatModel(messages=iter([AIMessage("Hi.")])))
        >>> asyncio.run(backend.generate([Message("user", "hello")])).value
        'Hi.'
    """

    def __init__(self, model: Any, *, context_window: int | None = None) -> None:
        if isinstance(model, str):
            from langchain.chat_models import init_chat_model

            model = init_chat_model(model)
        if not callable(getattr(model, "ainvoke", None)):
            msg = (
                f"ChatModelBackend: model={model!r} is not a LangChain chat model; pass one "
                "(ChatOpenAI(...), the model you gave create_agent) or 'provider:model'"
            )
            raise InvalidArgumentError(msg)
        self.model = model
        if context_window is None:
            profile = getattr(model, "profile", None)
            window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
            context_window = window if isinstance(window, int) else None
        self.context_window = context_window

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Return the chat model's answer to ``messages`` (``options`` are the model's own).

        Raises:
            BackendError: The mapped form of langchain-core's model errors.
        """
        request = to_langchain(messages)
        model = self.model
        if tools:
            model = model.bind_tools([t.to_openai() for t in tools])
        try:
            reply = await model.ainvoke(request)
        except Exception as exc:
            mapped = _mapped(exc)
            if mapped is None:
                raise
            raise mapped from exc
        if not isinstance(reply, AIMessage):
            msg = f"ChatModelBackend: the model answered {type(reply).__name__}, not an AIMessage"
            raise MalformedResponseError(msg)
        output = from_langchain([reply])[0]
        assert isinstance(output, ModelOutputThunk)
        return output

    def __repr__(self) -> str:
        return f"ChatModelBackend({type(self.model).__name__})"


class CompactionMiddleware(AgentMiddleware):
    """A LangChain v1 agent middleware that compacts the agent's messages before each model call.

    Args:
        compactor: Any of our compactors (``TokenBudgetCompactor``,
            ``ThresholdCompactor(LLMSummarizeCompactor(...))``, ``WindowCompactor``, ...).
        backend: The backend a summarizing compactor calls (``OpenAIBackend``, ...).
        counter: The token counter: ours (the default ``o200k_base`` one if
            ``None``) or any LangChain takes (see :func:`token_counter`).
        system_prompt: The ``system_prompt`` you gave ``create_agent``, if any.
            The agent adds it to every request outside its messages, so the
            middleware cannot see it; given here, it is counted against the
            budget (and pinned) while compacting.
        tools: The ``tools`` you gave ``create_agent``, if any (LangChain
            tools, functions or OpenAI tool dicts): their schemas travel with
            every request, outside the messages, and count against the budget.

    Examples:
        >>> from mellea_ctx import WindowCompactor
        >>> middleware = CompactionMiddleware(WindowCompactor(size=20))
        >>> middleware.name
        'CompactionMiddleware'
    """

    def __init__(
        self,
        compactor: Compactor,
        *,
        backend: Backend | None = None,
        counter: TokenCounter | Any = None,
        system_prompt: str | None = None,
        tools: Sequence[Any] = (),
    ) -> None:
        super().__init__()
        fix = "pass one of mellea_ctx's compactors"
        require_method("CompactionMiddleware", "compactor", compactor, "compact()", fix=fix)
        self.compactor = compactor
        self.backend = backend
        self.counter = token_counter(counter)
        self.prefix = (Message("system", system_prompt),) if system_prompt else ()
        self.tools_tokens = tools_tokens(tools)

    def _update(self, out: list[BaseMessage] | None) -> dict[str, Any] | None:
        if out is None:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *out]}

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Compact ``state["messages"]``; ``None`` (no update) when nothing changes."""
        return self._update(self._compaction().run(_pairs(state["messages"])))

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async form of :meth:`before_model` (awaits ``acompact``)."""
        return self._update(await self._compaction().arun(_pairs(state["messages"])))

    def _compaction(self) -> PairCompaction[Any]:
        """Both hooks' compaction, from the middleware's settings as they are now."""
        return PairCompaction(
            self.compactor,
            _to_one,
            backend=self.backend,
            counter=self.counter,
            prefix=self.prefix,
            tools_tokens=self.tools_tokens,
            repair="openai",
        )
