"""``react``: a tool-calling agent loop that compacts between turns and never breaks a tool pair.

Each turn asks the backend for one output with the history and the tools; if
the output calls tools, they run (parallel calls included; an async tool runs
concurrently with the others, a tool that raises becomes an error result),
their results are added, and the next turn starts; an output without tool
calls is the answer. Before every model call, the first one included (a
resumed context may already be over budget), the configured compactor runs;
pin the goal with ``pin_react_initiator`` in the compactors you build for it.

Two tools ride along when a compactor is configured, so the model can manage
its own context:

* ``compact_context(focus="")``: compact before the next model call, with a
  focus the summary must keep;
* ``recall(checkpoint=-1, start=0, count=10)``: read back, verbatim, messages
  a checkpoint replaced.

The tool definitions each request carries count against the compactor's
budget (:data:`~mellea_ctx._core.tool_tokens.request_overhead`). When the
provider still answers that the request is longer than its window, the loop
compacts once, forced, and retries once (``overflow``); if that cannot help
it raises :class:`~mellea_ctx.ContextOverflowError`, never loops.

With a session (``SessionMemory.open(...)``), every finished turn is written
to the store in one atomic write: the first one together with the goal, and
one after a compaction as a ``replace`` of the compacted dialogue. Request-only
messages (in ``ctx`` but not in the session's stored dialogue) are never
stored, not even after a compaction: they are left out of the replaced
dialogue and out of the spans of the checkpoints this run made. A turn that
fails or is cancelled writes nothing, so the store holds exactly what it held
after the last finished turn (before the call, if none finished) and a retried
call does not store its goal twice. The system instructions are never stored.

With a :class:`~mellea_ctx.ToolSearch`, deferred tools stay out of requests
until the model finds them with ``tool_search``; definitions delivered in a
session are not offered twice, and a compaction resets that record. With
``catalog="system"`` the loop puts the catalog in the request's system prompt
itself; on :class:`~mellea_ctx.AnthropicBackend` it takes the
``defer_loading`` + ``tool_reference`` path (``searching``).

``on_event`` hears ``turn_started`` first in each turn (before its
compaction), and ``turn_failed`` (with ``error``) before any exception
leaves the loop.

The parts live beside this module: ``result`` (:class:`ReactResult`,
:class:`SessionLike`), ``loop_state`` (one run's state and its session writes)
``compaction_tools`` (the compactor in the loop, ``compact_context`` and
``recall``) and ``searching`` (tool search in the loop's requests).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .._backends.bridge import run_blocking
from .._backends.telemetry import usage_sink
from .._compaction.records import record_sink
from .._core.checks import require_instance, require_int, require_method
from .._core.components import Component, ModelOutputThunk, ReactInitiator, ToolCall, ToolMessage
from .._core.context import ChatContext
from .._core.exceptions import InvalidArgumentError, InvalidContextError
from .._core.parts import TextPart
from .._core.protocols import Backend, Compactor
from .._core.reprs import short_repr
from .._core.tools import Tool, ToolArgumentError
from .._formats.openai import validate_openai
from .._formats.responses import answer_keys, is_custom_call
from .compaction_tools import COMPACT_TOOL, RECALL_TOOL, builtin_tools, own_backend
from .events import EventHook
from .loop_state import Loop, dialogue_of, finish_turn, request_only
from .overflow import compact_for_request, generate
from .result import ReactResult, SessionLike
from .searching import Searching as _Searching
from .tool_search import ToolSearch

#: ``loop_budget=UNLIMITED`` (-1, as in mellea): no limit on model calls.
UNLIMITED = -1


async def _run_tool(registry: Mapping[str, Tool], call: ToolCall) -> tuple[str, str | None]:
    """Run one call; return its result text and an error description (or ``None``)."""
    found = registry.get(call.name)
    if found is None:
        names = ", ".join(sorted(registry)) or "none"
        error = f"there is no tool named {call.name!r}; the tools are: {names}"
        return f"error: {error}", error
    try:
        return await found.ainvoke(_arguments(found, call)), None
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool's failure is a result for the model, not a crash
        error = f"{type(exc).__name__}: {exc}"
        return f"error: {error}", error


def _arguments(found: Tool, call: ToolCall) -> str:
    """The JSON arguments for ``found``: a custom call's free-form input is its one argument."""
    if not is_custom_call(call):
        return call.arguments
    names = list(found.parameters.get("properties", {}))
    if len(names) != 1:
        msg = (
            f"tool {found.name}: a custom tool call's input is free-form text, which goes to a "
            f"tool of one argument; it takes {', '.join(sorted(names)) or 'no arguments'}"
        )
        raise ToolArgumentError(msg)
    return json.dumps({names[0]: call.arguments})


def _validate(
    goal: object,
    ctx: object,
    backend: object,
    loop_budget: object,
    tools: object,
    compactor: object,
) -> list[Tool]:
    if not isinstance(goal, str) or not goal.strip():
        msg = f"react: goal={goal!r} must be a non-empty str saying what the agent should do"
        raise InvalidArgumentError(msg)
    fix = "pass ChatContext() or session.context(system=...)"
    require_instance("react", "ctx", ctx, ChatContext, fix=fix)
    fix = "pass a Backend such as OpenAIBackend(...), AnthropicBackend(...) or ScriptedBackend(...)"
    require_method("react", "backend", backend, "generate()", fix=fix)
    if not (loop_budget.__class__ is int and loop_budget == UNLIMITED):
        about, also = "model calls allowed", f"{UNLIMITED} for no limit"
        require_int("react", "loop_budget", loop_budget, minimum=1, about=about, also=also)
    if tools is None:
        tools = ()
    if isinstance(tools, Tool | str | Mapping) or not isinstance(tools, Iterable):
        msg = f"react: tools={short_repr(tools)} must be a list of Tool values (or None for none)"
        raise InvalidArgumentError(msg)
    checked: list[Tool] = []
    for item in tools:
        if not isinstance(item, Tool):
            msg = f"react: tools must be Tool values; wrap {item!r} with mellea_ctx.tool(...)"
            raise InvalidArgumentError(msg)
        checked.append(item)
    names = [t.name for t in checked]
    clashes = {n for n in names if names.count(n) > 1} | (
        {COMPACT_TOOL, RECALL_TOOL} & set(names) if compactor is not None else set()
    )
    if clashes:
        msg = (
            f"react: tool names must be unique and not {COMPACT_TOOL}/{RECALL_TOOL} "
            f"when a compactor is given; clash: {sorted(clashes)}"
        )
        raise InvalidArgumentError(msg)
    require_method("react", "compactor", compactor, "compact()", optional=True)
    return checked


async def areact(
    goal: str,
    ctx: ChatContext,
    backend: Backend,
    *,
    tools: Iterable[Tool] | None = (),
    compactor: Compactor | None = None,
    loop_budget: int = 10,
    model_options: Mapping[str, Any] | None = None,
    on_event: EventHook | None = None,
    session: SessionLike | None = None,
    tool_search: ToolSearch | None = None,
) -> ReactResult:
    """Run the agent loop on ``goal`` (async). See :func:`react`."""
    user_tools = _validate(goal, ctx, backend, loop_budget, tools, compactor)
    require_instance("react", "tool_search", tool_search, ToolSearch, optional=True)
    loop = Loop(backend=backend, compactor=compactor, on_event=on_event, session=session)
    builtins = builtin_tools(loop) if compactor is not None else []
    searching = _Searching.of(tool_search, backend, session, loop, user_tools, builtins)
    registry = {t.name: t for t in [*user_tools, *builtins, *searching.extra_tools]}
    compaction_backend = None if own_backend(compactor) is not None else backend
    if session is not None:
        loop.committed = dialogue_of(ctx)
        loop.request_only = request_only(ctx, session)
    turns = itertools.count(1) if loop_budget == UNLIMITED else range(1, loop_budget + 1)
    token = record_sink.set(loop.on_record)
    billing = usage_sink.set(loop.billed)  # summary requests' usage, beside the agent's
    try:
        # The goal is stored with the first finished turn, not before: a call that fails
        # or is cancelled before any turn finishes leaves the session as it was.
        loop.ctx = ctx.add(ReactInitiator(goal))
        for turn in turns:
            loop.turn = turn
            loop.emit("turn_started")
            try:
                answer = await _turn(loop, searching, registry, compaction_backend, model_options)
            except Exception as exc:
                loop.emit("turn_failed", error=f"{type(exc).__name__}: {exc}")
                raise
            if answer is not None:
                return ReactResult(
                    answer.value, loop.ctx, turn, "answer", loop.session, tuple(loop.billed)
                )
        return ReactResult(None, loop.ctx, loop.turn, "budget", loop.session, tuple(loop.billed))
    finally:
        usage_sink.reset(billing)
        record_sink.reset(token)


def _checked(loop: Loop, searching: _Searching) -> list[Component]:
    """The messages to send for ``loop``'s context, refused if they break tool-call rules."""
    assert loop.ctx is not None
    messages = searching.with_catalog(loop.ctx.view_for_generation())
    problems = validate_openai(messages)
    if problems:
        msg = f"react: refusing to send a history that breaks tool-call rules: {problems[0]}"
        raise InvalidContextError(msg)
    return messages


def _as_answer(output: ModelOutputThunk) -> ModelOutputThunk:
    """``output``, or, when it holds no text and calls no tool, the empty answer it is.

    A model may answer nothing (``content: null``, no calls). Stored as it
    came, that message is one the providers refuse on every later request
    (OpenAI: content "is required unless tool_calls ... is specified"), so
    it becomes empty text, and ``answer`` is ``""``, not ``None``.
    """
    if output.tool_calls or any(type(part) is TextPart for part in output.parts):
        return output
    return attrs.evolve(output, value="", parts=(*output.parts, TextPart("")))


async def _turn(
    loop: Loop,
    searching: _Searching,
    registry: Mapping[str, Tool],
    compaction_backend: Backend | None,
    model_options: Mapping[str, Any] | None,
) -> ModelOutputThunk | None:
    """Run one turn: compact, ask the model, run its tools, commit; return the answer if any."""
    assert loop.ctx is not None
    if loop.compactor is not None:
        forced = loop.compact_requested
        if forced:
            loop.emit("compaction_started")
        before = loop.ctx
        # The tool definitions about to be sent count against the budget.
        _, planned = searching.request(model_options)
        loop.ctx = await compact_for_request(
            loop,
            loop.compactor,
            before,
            compaction_backend,
            planned,
            force=forced,
            focus=loop.focus,
        )
        loop.compact_requested, loop.focus = False, ""
        # The compacted dialogue is stored with this turn, when it finishes.
        if loop.ctx is not before:
            searching.after_compaction()
    options, tools_now = searching.request(model_options)
    sent = loop.ctx
    output = await generate(
        loop,
        loop.compactor,
        compaction_backend,
        lambda: _checked(loop, searching),
        tools_now,
        options,
    )
    if loop.ctx is not sent:
        searching.after_compaction()  # overflow recovery compacted
    if not isinstance(output, ModelOutputThunk):
        msg = f"react: the backend returned {short_repr(output)}, not a ModelOutputThunk"
        raise InvalidContextError(msg)
    if output.usage is not None:
        loop.billed.append(output.usage)
    output = _as_answer(output)
    loop.ctx = loop.ctx.add(output)
    if not output.tool_calls:
        await finish_turn(loop)
        return output
    results = await asyncio.gather(*(_run_tool(registry, call) for call in output.tool_calls))
    for call, (text, error) in zip(output.tool_calls, results, strict=True):
        answer = ToolMessage(text, tool_call_id=call.id, name=call.name, extra=answer_keys(call))
        loop.ctx = loop.ctx.add(answer)
        loop.emit("tool_called", tool=call.name, error=error)
    await finish_turn(loop)
    return None


def react(
    goal: str,
    ctx: ChatContext,
    backend: Backend,
    *,
    tools: Iterable[Tool] | None = (),
    compactor: Compactor | None = None,
    loop_budget: int = 10,
    model_options: Mapping[str, Any] | None = None,
    on_event: EventHook | None = None,
    session: SessionLike | None = None,
    tool_search: ToolSearch | None = None,
) -> ReactResult:
    """Run a tool-calling agent loop on ``goal`` and return how it ended.

    The goal is added as a :class:`~mellea_ctx.ReactInitiator`; ``compactor``
    runs before every model call, the first one included (pin the goal with
    ``pin_react_initiator`` in the compactors you build for this). The history
    sent to the backend never holds a split tool exchange.

    Args:
        goal: What the agent should achieve.
        ctx: The context to start from (a system prompt, earlier dialogue);
            not modified.
        backend: The model.
        tools: The tools the model may call (see :func:`~mellea_ctx.tool`);
            ``None`` means none.
        compactor: Run between turns; also offered to the model as the
            ``compact_context`` tool, with ``recall`` to read back what a
            checkpoint replaced.
        loop_budget: Model calls allowed; ``-1`` (:data:`UNLIMITED`, as in
            mellea) for no limit.
        model_options: Passed to the backend on every call.
        on_event: Receives an :class:`~mellea_ctx.Event` for each step,
            ``turn_failed`` before an exception propagates.
        session: A session snapshot to write each finished turn to; the
            messages of ``ctx`` it does not store are request-only and are
            never stored.
        tool_search: Deferred tools found through a ``tool_search`` tool
            (BM25); its catalog joins ``tools``.

    Returns:
        A :class:`ReactResult` with the answer (or ``None`` when the budget
        ran out), the final context, and the session snapshot.

    Raises:
        InvalidArgumentError: For a bad goal, context, backend, budget, tool
            or compactor.
        ContextOverflowError: When the provider says the request is longer
            than its window and one forced compaction and one retry did not
            help (or there is no compactor); the message gives both sizes.
        BackendError: When the backend fails (the turn is not committed).
        SessionConflictError: When another writer changed the session.

    Examples:
        >>> from mellea_ctx import ChatContext, ModelOutputThunk, ScriptedBackend, ToolCall, tool
        >>> @tool
        ... def weather(city: str) -> str:
        ...     '''The weather in a city.'''
        ...     return f"Sunny in {city}"
        >>> def model(messages, options):
        ...     if messages[-1].role == "tool":
        ...         return messages[-1].content
        ...     call = ToolCall("c1", "weather", '{"city": "Oslo"}')
        ...     return ModelOutputThunk(None, tool_calls=[call])
        >>> react("Weather in Oslo?", ChatContext(), ScriptedBackend(model), tools=[weather]).answer
        'Sunny in Oslo'
    """
    return run_blocking(
        lambda: areact(
            goal,
            ctx,
            backend,
            tools=tools,
            compactor=compactor,
            loop_budget=loop_budget,
            model_options=model_options,
            on_event=on_event,
            session=session,
            tool_search=tool_search,
        ),
        timeout=None,
    )
