"""``ScriptedBackend``: a backend that answers with a plain function, for users' own tests.

A backend turns a list of components into one model output. Concrete
backends (``OpenAIBackend``, ``AnthropicBackend``, the offline
``ExtractiveBackend``) implement it; compactors that only drop components
ignore it. Provider errors leave a backend only as our own
:class:`~mellea_ctx.BackendError` subclasses.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Union  # Union: aliases must run on 3.10

from .._core.checks import require_callable
from .._core.components import Component, ModelOutputThunk
from .._core.exceptions import MalformedResponseError
from .._core.protocols import BaseBackend
from .._core.tools import Tool
from .windows import check_window

#: What a ``ScriptedBackend`` handler may return: text, or a full output.
ScriptedReply = Union[str, ModelOutputThunk]  # noqa: UP007 (a runtime alias on 3.10)

Handler = Callable[
    [Sequence[Component], Mapping[str, Any]],
    ScriptedReply | Awaitable[ScriptedReply],
]


class ScriptedBackend(BaseBackend):
    """A backend that answers with a plain function: for tests and demos.

    The handler receives the messages and the model options (with the
    offered tools, if any, under ``"tools"``) and returns a string, a
    :class:`~mellea_ctx.ModelOutputThunk`, or an awaitable of either; it may
    raise any :class:`~mellea_ctx.BackendError` to simulate a provider failure.
    Every call is recorded in ``calls``.

    Args:
        handler: The function that answers.
        context_window: The window in tokens to simulate (``None``: unbounded);
            the summary engine fits what it sends into it, so a test can play
            a small local model: ``ScriptedBackend(handler, context_window=4096)``.

    Examples:
        >>> import asyncio
        >>> from mellea_ctx import Message
        >>> backend = ScriptedBackend(lambda messages, options: f"{len(messages)} messages")
        >>> asyncio.run(backend.generate([Message("user", "hi")])).value
        '1 messages'
    """

    def __init__(self, handler: Handler, *, context_window: int | None = None) -> None:
        fix = "pass a function (messages, model_options) -> str"
        require_callable("ScriptedBackend", "handler", handler, fix=fix)
        self._handler = handler
        self.context_window = check_window("ScriptedBackend", context_window)
        self.calls: list[tuple[tuple[Component, ...], dict[str, Any]]] = []

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Return the handler's answer as a ``ModelOutputThunk``."""
        if tools:
            options["tools"] = list(tools)
        self.calls.append((messages, options))
        reply = self._handler(messages, options)
        if reply.__class__ is str:  # the usual answer, before asking whether it is awaitable
            return ModelOutputThunk(reply)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, ModelOutputThunk):
            return reply
        if isinstance(reply, str):
            return ModelOutputThunk(reply)
        msg = f"ScriptedBackend: the handler returned {reply!r}; return a str or a ModelOutputThunk"
        raise MalformedResponseError(msg)

    def __repr__(self) -> str:
        name = getattr(self._handler, "__name__", repr(self._handler))
        return f"ScriptedBackend({name})"
