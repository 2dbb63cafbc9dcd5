"""The interfaces the layers above implement: ``Backend``, ``Compactor``, ``InlineCompactor``.

``BaseBackend`` is the base of every built-in backend: its ``generate`` checks
and normalises the arguments once, then calls the one hook a subclass writes,
``answer``.

They live in the core because the context calls them: ``ChatContext.add``
runs its inline compactor, and a compactor hands a backend its requests. The
implementations live above (``_backends``, ``_compaction``), so every import
in the package points down.

Every compactor is called the same way, by :func:`compact_with` and
:func:`acompact_with`: ``force`` (run past any trigger: the provider said the
request is too long, or the model asked) and ``instructions`` (a focus the
summary should keep) reach any compactor whose ``compact`` / ``acompact``
accepts them, ours and a user's alike; a compactor that accepts neither is
called with ``backend`` alone. Every built-in compactor's ``compact`` and
``acompact`` are :class:`BaseCompactor`'s, written once (argument checks, the
gate); each built-in supplies only its :meth:`BaseCompactor.steps`.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import inspect
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from types import GeneratorType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import attrs

from .checks import argument_error, require_bool, require_instance, require_int
from .components import Component, ModelOutputThunk
from .exceptions import InvalidComponentError
from .tools import Tool

if TYPE_CHECKING:
    from .context import ChatContext


@runtime_checkable
class Backend(Protocol):
    """Generates one model output for a list of components.

    ``tools`` are the definitions the model may call this time; a backend
    that cannot call tools ignores them.
    """

    async def generate(
        self,
        messages: Sequence[Component],
        *,
        model_options: Mapping[str, Any] | None = None,
        tools: Sequence[Tool] | None = None,
    ) -> ModelOutputThunk:
        """Return the model's output for ``messages``."""
        ...


def _items(owner: str, name: str, value: object, fix: str) -> tuple[Any, ...]:
    """``value`` as a tuple, if it is a sequence (not text, a mapping or a lone component)."""
    if value.__class__ is list or value.__class__ is tuple:  # the usual case: no ABC to ask
        return tuple(value)
    if isinstance(value, (str, bytes, Mapping, Component)) or not isinstance(value, Iterable):
        raise argument_error(owner, name, value, "must be a sequence", fix)
    return tuple(value)


def _messages(owner: str, messages: object) -> tuple[Component, ...]:
    items = _items(owner, "messages", messages, "wrap a single component in a list")
    for index, item in enumerate(items):
        if not isinstance(item, Component):
            fix = "build it with Message(...) or from_openai(...)"
            raise argument_error(
                owner,
                f"messages[{index}]",
                item,
                "is not a Component",
                fix,
                error=InvalidComponentError,
            )
    return items


def _tools(owner: str, tools: object) -> tuple[Tool, ...]:
    if tools is None:
        return ()
    items = _items(owner, "tools", tools, "pass a list of Tool")
    for index, item in enumerate(items):
        fix = "build it with tool(function) or Tool(name, description, parameters)"
        require_instance(owner, f"tools[{index}]", item, Tool, fix=fix)
    return items


class BaseBackend(abc.ABC):
    """The base of the built-in backends: ``generate`` checked once, then :meth:`answer`.

    :meth:`generate` has the :class:`Backend` signature. Before anything is
    sent it checks what the caller gave (each message a
    :class:`~mellea_ctx.Component`, ``model_options`` a mapping or ``None``,
    each tool a :class:`~mellea_ctx.Tool`), so a caller's mistake is our own
    error, never a provider failure, and hands :meth:`answer` fresh values:
    a tuple of components, a new dict of options (``answer`` may change it)
    and a tuple of tools (``()`` for none). Subclass it for a backend of
    your own and write ``answer``; a plain class with a ``generate`` of its
    own satisfies :class:`Backend` just as well.

    Examples:
        >>> import asyncio
        >>> from mellea_ctx import BaseBackend, Message, ModelOutputThunk
        >>> class Echo(BaseBackend):
        ...     async def answer(self, messages, options, tools):
        ...         return ModelOutputThunk(messages[-1].content)
        >>> asyncio.run(Echo().generate([Message("user", "hi")])).value
        'hi'
        >>> asyncio.run(Echo().generate(["hi"]))
        Traceback (most recent call last):
        ...
        mellea_ctx._core.exceptions.InvalidComponentError: Echo.generate: messages[0]='hi' \
is not a Component; build it with Message(...) or from_openai(...)
    """

    __slots__ = ()

    async def generate(
        self,
        messages: Sequence[Component],
        *,
        model_options: Mapping[str, Any] | None = None,
        tools: Sequence[Tool] | None = None,
    ) -> ModelOutputThunk:
        """Check the arguments, then return :meth:`answer`'s output for them.

        Raises:
            InvalidArgumentError: When ``messages`` or ``tools`` is not a
                sequence, ``model_options`` not a mapping or ``None``, or a
                tool not a ``Tool``.
            InvalidComponentError: When a message is not a ``Component``.
        """
        kind = messages.__class__
        if (
            (kind is list or kind is tuple)
            and (model_options is None or model_options.__class__ is dict)
            and tools is None
            and all(map(isinstance, messages, repeat(Component)))
        ):  # the usual call, checked without a loop of ours or an ABC to ask
            return await self.answer(tuple(messages), dict(model_options or ()), ())
        owner = f"{type(self).__name__}.generate"
        components = _messages(owner, messages)
        fix = "pass a dict such as {'max_tokens': 400}"
        options = require_instance(
            owner, "model_options", model_options, Mapping, optional=True, fix=fix
        )
        offered = _tools(owner, tools)
        return await self.answer(components, dict(options or {}), offered)

    @abc.abstractmethod
    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Return the model's output for checked arguments (the one method a subclass writes).

        Args:
            messages: The history, oldest first.
            options: The caller's ``model_options``, a new dict for this call.
            tools: The definitions the model may call (``()``: none offered).
        """


@runtime_checkable
class Compactor(Protocol):
    """Shrinks a context into a new, smaller one.

    Implementations must not modify ``ctx``; they return a new context, or
    ``ctx`` itself when nothing needs compacting, and the result carries
    ``ctx``'s compactor. An ``async acompact`` with the same keywords is
    optional: :func:`acompact_with` awaits it when there is one, and calls
    ``compact`` otherwise (:class:`InlineCompactor` has one that does).

    ``force`` asks a compactor with a trigger (:class:`GatedCompactor`) to run
    past it; ``instructions`` is a focus for a summary. Both are keywords a
    compactor may leave out of its signature: :func:`compact_with` passes only
    those it accepts.
    """

    def compact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        """Return a compacted copy of ``ctx`` (or ``ctx`` itself when nothing changes)."""
        ...


@runtime_checkable
class GatedCompactor(Compactor, Protocol):
    """A compactor with a trigger: it compacts only when :meth:`due` says so (or ``force``).

    :class:`~mellea_ctx.ThresholdCompactor`, :class:`~mellea_ctx.TokenBudgetCompactor`
    and :class:`~mellea_ctx.TieredCompactor` are gated. A gated compactor that
    calls a model may also have ``backoff_adds``: riding inline, a compaction
    that called the model and changed nothing skips that many adds before the
    next try (see ``ChatContext.compaction_backoff``; :func:`inline_backoff`).
    """

    def due(self, ctx: ChatContext) -> bool:
        """Return whether ``ctx`` is past the trigger."""
        ...


#: Set while ``ChatContext.add`` runs its compactor: a failure backoff applies then only.
_riding_inline: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mellea_ctx_riding_inline", default=False
)


def inline_backoff(adds: int) -> int:
    """``adds`` while ``ChatContext.add`` runs the compactor, else 0 (your own call never waits).

    A model-calling compactor passes its ``backoff_adds`` through this, so the
    same ``compact`` serves an add and a call of your own: on a failure it
    returns ``ctx.with_backoff(inline_backoff(self.backoff_adds))``.

    Examples:
        >>> from mellea_ctx import inline_backoff
        >>> inline_backoff(8)  # outside ChatContext.add: a call of your own never waits
        0
    """
    require_int("inline_backoff", "adds", adds)
    return adds if _riding_inline.get() else 0


@contextlib.contextmanager
def outside_inline() -> Iterator[None]:
    """Run a compactor's own inner compactions as plain calls (no backoff of their own).

    :class:`~mellea_ctx.TieredCompactor` runs its tiers in this: a tier's
    failure is the tier's result, not a backoff of the whole context.
    """
    token = _riding_inline.set(False)
    try:
        yield
    finally:
        _riding_inline.reset(token)


#: The keywords beyond ``backend`` that a compactor's method accepts, per function.
_ACCEPTED: dict[Any, frozenset[str]] = {}
_OPTIONS = frozenset({"force", "instructions"})


def _options(method: Callable[..., Any], force: bool, instructions: str | None) -> dict[str, Any]:
    """The ``force`` / ``instructions`` keywords ``method`` accepts, with their values."""
    key = getattr(method, "__func__", method)
    accepted = _ACCEPTED.get(key)
    if accepted is None:
        try:
            parameters = inspect.signature(method).parameters.values()
        except (TypeError, ValueError):  # a builtin with no signature: backend alone
            parameters = ()  # type: ignore[assignment]
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            accepted = _OPTIONS
        else:
            accepted = _OPTIONS & {p.name for p in parameters}
        _ACCEPTED[key] = accepted
    options: dict[str, Any] = {}
    if force and "force" in accepted:
        options["force"] = True
    if instructions is not None and "instructions" in accepted:
        options["instructions"] = instructions
    return options


def compact_with(
    compactor: Compactor,
    ctx: ChatContext,
    *,
    backend: Backend | None = None,
    force: bool = False,
    instructions: str | None = None,
) -> ChatContext:
    """Call ``compactor.compact`` with the options its signature accepts.

    The one way every layer calls a compactor it was given: no switch on its
    class. ``force`` and ``instructions`` reach it when its ``compact`` takes
    them (or ``**kwargs``).
    """
    require_bool("compact_with", "force", force)
    run = compactor.compact
    result: ChatContext = run(ctx, backend=backend, **_options(run, force, instructions))
    return result


async def acompact_with(
    compactor: Compactor,
    ctx: ChatContext,
    *,
    backend: Backend | None = None,
    force: bool = False,
    instructions: str | None = None,
) -> ChatContext:
    """Await ``compactor.acompact`` (or call ``compact``) with the options it accepts."""
    require_bool("acompact_with", "force", force)
    run = getattr(compactor, "acompact", None)
    if run is None:
        return compact_with(compactor, ctx, backend=backend, force=force, instructions=instructions)
    result: ChatContext = await run(ctx, backend=backend, **_options(run, force, instructions))
    return result


def _owner(cls: type, name: str) -> type | None:
    """The class of ``cls``'s method resolution order that defines ``name``."""
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


def written_for(cls: type, name: str, basis: str) -> bool:
    """Whether ``cls.<name>`` was written for ``cls.<basis>``: defined with it or below it.

    A subclass that overrides ``basis`` and inherits ``name`` (written for
    the parent's ``basis``) gets ``False``: a counter's ``bound`` for its
    ``count``, an inline compactor's ``inline_cut`` for its ``compact``.
    """
    owner, basis_owner = _owner(cls, name), _owner(cls, basis)
    return owner is not None and basis_owner is not None and issubclass(owner, basis_owner)


#: A compaction's steps: yields the effects to run (:class:`Effect`), returns the result.
Steps = Generator["Effect", Any, "ChatContext"]


class CompactCall(NamedTuple):
    """One call of a :class:`BaseCompactor`, its arguments checked: what its step reads.

    Built by :meth:`BaseCompactor.compact` / :meth:`BaseCompactor.acompact`
    (the one place the arguments are checked) and handed to
    :meth:`BaseCompactor.steps`. Frozen; ``call._replace(force=True)`` is the
    same call, forced. (A named tuple because every ``compact`` builds one:
    it costs a third of a frozen attrs class's ``__init__``.)
    """

    ctx: ChatContext
    backend: Backend | None = None
    force: bool = False
    instructions: str | None = None


#: Builds a :class:`CompactCall` from its four fields with no Python frame (``compact``'s hot path).
_new_call = tuple.__new__


class Effect(Protocol):
    """What a compaction step asks its driver to do: ``run()`` in ``compact``, ``arun()`` in
    ``acompact``. The reply is sent back into the step."""

    def run(self) -> Any:
        """Do it, blocking."""
        ...

    async def arun(self) -> Any:
        """Do it, awaiting what it waits for."""
        ...


@attrs.frozen
class Compaction:
    """The effect of running ``compactor`` on ``call`` (a gate's inner, a tier).

    ``run`` is :func:`compact_with`, ``arun`` :func:`acompact_with`;
    ``alone`` runs it :func:`outside_inline` (a tier's failure is the tier's
    result, not a backoff of the whole context).
    """

    compactor: Compactor
    call: CompactCall
    alone: bool = False

    def run(self) -> ChatContext:
        """The compaction, blocking."""
        call = self.call
        with outside_inline() if self.alone else contextlib.nullcontext():
            return compact_with(
                self.compactor,
                call.ctx,
                backend=call.backend,
                force=call.force,
                instructions=call.instructions,
            )

    async def arun(self) -> ChatContext:
        """The compaction, awaited."""
        call = self.call
        with outside_inline() if self.alone else contextlib.nullcontext():
            return await acompact_with(
                self.compactor,
                call.ctx,
                backend=call.backend,
                force=call.force,
                instructions=call.instructions,
            )


#: ``ChatContext``, once :func:`_context_type` has looked it up: a context of exactly
#: that class (what ``ChatContext.add`` hands over) is told apart by one identity test.
_context_class: type | None = None


def _context_type() -> type:
    global _context_class  # the context imports this module: looked up once
    if _context_class is None:
        from .context import ChatContext

        _context_class = ChatContext
    return _context_class


def _checked(
    compactor: object, method: str, ctx: object, force: object, instructions: object
) -> None:
    """The checks of a compaction's arguments, for every :class:`BaseCompactor`.

    ``compact`` and ``acompact`` call it unless the call is the one
    ``ChatContext.add`` makes (a ``ChatContext``, ``force=False``, no
    ``instructions``), which passes every check. ``backend`` is handed on as
    it is: a compactor that calls no model never reads it, and a model call
    refuses a backend it cannot call.
    """
    owner = f"{type(compactor).__name__}.{method}"
    require_instance(owner, "ctx", ctx, _context_type(), fix="pass the ChatContext to compact")
    require_bool(owner, "force", force, fix="pass True to run past the compactor's trigger")
    fix = "pass the focus the summary should keep as text, or None"
    require_instance(owner, "instructions", instructions, str, optional=True, fix=fix)


def _drive(steps: Steps) -> ChatContext:
    """Run ``steps``, each effect blocking; return the result."""
    try:
        effect = next(steps)
        while True:
            effect = steps.send(effect.run())
    except StopIteration as done:
        result: ChatContext = done.value
        return result


async def _adrive(steps: Steps) -> ChatContext:
    """Run ``steps``, each effect awaited; return the result."""
    try:
        effect = next(steps)
        while True:
            effect = steps.send(await effect.arun())
    except StopIteration as done:
        result: ChatContext = done.value
        return result


class BaseCompactor:
    """The base of every compactor here: ``compact`` and ``acompact`` written once.

    Both check their arguments (the same :class:`~mellea_ctx.InvalidArgumentError`
    messages for every compactor), return ``ctx`` when the compactor is gated
    (it has a ``due``, see :class:`GatedCompactor`) and neither ``force`` nor
    ``due(ctx)`` says to run, and otherwise run :meth:`steps`, the
    compactor's own part: its result, or a generator that yields the
    effects to run (a summary, an inner compactor) and returns the result.
    ``compact`` runs each effect blocking, ``acompact`` awaits it.

    A subclass that overrides ``compact`` itself (below its ``steps``) gets an
    ``acompact`` that runs that ``compact``.
    """

    __slots__ = ()

    #: Per subclass: its ``due`` when it has one (the gate), else ``None``.
    _gate: Any = None
    #: Per subclass: whether ``acompact`` runs ``steps`` (False: ``compact`` was overridden).
    _steps_are_compact: bool = True
    #: Per subclass: whether its ``compact`` is this one (:func:`compact_inline` asks the gate).
    _base_compact: bool = True
    #: Per subclass: its ``inline_cut`` when its ``compact`` is that pure cut (honoured by
    #: ``ChatContext.add`` and by ``compact`` itself, see :class:`InlineCompactor`), else ``None``.
    _cut: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        due = getattr(cls, "due", None)
        cls._gate = None if due is None else staticmethod(due)  # called as gate(self, ctx)
        cls._steps_are_compact = written_for(cls, "steps", "compact")
        cls._base_compact = cls.compact is BaseCompactor.compact

    def steps(self, call: CompactCall) -> ChatContext | Steps:
        """This compactor's part: the result for ``call``, or the steps that make it.

        Raises:
            NotImplementedError: Here: a subclass overrides it, or ``compact``.
        """
        msg = (
            f"{type(self).__name__}.compact: InlineCompactor.compact has no default; "
            "return a ChatContext from your own compact() instead of calling "
            "super().compact() (return ctx itself when nothing needs compacting)"
        )
        raise NotImplementedError(msg)

    def compact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        """Return a compacted copy of ``ctx`` (or ``ctx`` itself when nothing changes).

        Returns a new context; ``ctx`` is not modified.

        Raises:
            InvalidArgumentError: For a ``ctx`` that is not a ``ChatContext``, a
                ``backend`` with no ``generate``, a ``force`` that is not a bool,
                or ``instructions`` that are not text.
        """
        if type(ctx) is not _context_class or force is not False or instructions is not None:
            _checked(self, "compact", ctx, force, instructions)
        gate = self._gate
        if gate is not None and not force and not gate(self, ctx):
            return ctx
        cut = self._cut
        if cut is not None:  # a pure cut: no steps to drive
            span = cut(self, ctx)
            return ctx if span is None else ctx.replace_span(*span)
        return self._run(ctx, backend, force, instructions)

    def _run(
        self, ctx: ChatContext, backend: Backend | None, force: bool, instructions: str | None
    ) -> ChatContext:
        """:meth:`steps` for a checked call past the gate, each effect blocking."""
        steps = self.steps(_new_call(CompactCall, (ctx, backend, force, instructions)))
        if isinstance(steps, GeneratorType):
            return _drive(steps)
        return steps  # type: ignore[return-value]  # not a generator: the step's result

    async def acompact(
        self,
        ctx: ChatContext,
        *,
        backend: Backend | None = None,
        force: bool = False,
        instructions: str | None = None,
    ) -> ChatContext:
        """Async form of :meth:`compact`: the same checks and gate, each effect awaited."""
        if not self._steps_are_compact:  # a compact of the subclass's own: no I/O to await
            return compact_with(self, ctx, backend=backend, force=force, instructions=instructions)
        if type(ctx) is not _context_class or force is not False or instructions is not None:
            _checked(self, "acompact", ctx, force, instructions)
        gate = self._gate
        if gate is not None and not force and not gate(self, ctx):
            return ctx
        steps = self.steps(_new_call(CompactCall, (ctx, backend, force, instructions)))
        if isinstance(steps, GeneratorType):
            return await _adrive(steps)
        return steps  # type: ignore[return-value]  # not a generator: the step's result


class InlineCompactor(BaseCompactor):
    """Marker base for compactors that may ride inside ``ChatContext(compactor=...)``.

    ``ChatContext.add`` calls ``compact`` after every add, without a backend,
    so an inline compactor must call no model at all, or only rarely (behind a
    threshold). Opt in by inheriting; satisfying :class:`Compactor` is not
    enough. A compactor of your own overrides ``compact`` (``force`` and
    ``instructions`` may be left out of its signature) and gets an
    ``acompact`` that runs it; the built-ins override :meth:`BaseCompactor.steps`.

    **The inline cut (optional).** A compactor whose ``compact`` is a pure
    drop (it returns ``ctx.replace_span(p, k)`` or ``ctx`` itself, and
    nothing else) may also define ``inline_cut(ctx) -> tuple[int, int] | None``:
    the ``(p, k)`` its ``compact`` would drop, or ``None`` for "nothing".
    ``ChatContext.add`` then drops ``[p:k]`` in place on the node it has just
    built, which no caller has seen, instead of building a second node (the
    result is the one ``compact`` returns; :class:`~mellea_ctx.WindowCompactor`
    has one, and an add costs it one node). The hook is honoured only when it
    is defined in the class that defines ``compact`` (and ``steps``) or below
    it: a subclass that overrides ``compact`` and inherits ``inline_cut``
    (written for the parent's ``compact``) gets its own ``compact`` run on
    every add. The cut must be safe (no tool exchange split); a tool result it
    leaves detached is noticed all the same (``ChatContext.has_detached_results``).
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        honoured = all(written_for(cls, "inline_cut", basis) for basis in ("compact", "steps"))
        hook = vars(_owner(cls, "inline_cut"))["inline_cut"] if honoured else None
        cls._cut = None if hook is None else staticmethod(hook)  # called as cut(self, ctx)


def compact_inline(compactor: InlineCompactor, ctx: ChatContext) -> ChatContext:
    """What ``ChatContext.add`` runs after each add: ``compactor.compact(ctx)``, riding inline.

    While it runs, :func:`inline_backoff` gives a model-calling compactor
    its ``backoff_adds``, so a failed summary starts a failure backoff (see
    ``ChatContext.compaction_backoff``); a ``compact`` call of your own
    never does. A subclass's own ``compact`` is what runs; for
    :meth:`BaseCompactor.compact` the gate is asked first, so an add that is
    not due costs no more than the question (``ctx`` comes from ``add``: it
    passes every argument check).
    """
    base = compactor._base_compact
    if base:
        gate = compactor._gate
        if gate is not None and not gate(compactor, ctx):
            return ctx
    token = _riding_inline.set(True)
    try:
        return compactor._run(ctx, None, False, None) if base else compactor.compact(ctx)
    finally:
        _riding_inline.reset(token)
