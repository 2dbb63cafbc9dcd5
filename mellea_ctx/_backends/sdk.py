"""What the OpenAI and Anthropic backends share: settings, options, and the error boundary.

A subclass names its provider, builds one request (no I/O), sends it
through its SDK and parses the answer; this base merges model options, and
maps every failure of the SDK call, and only of that call, to our exceptions
(``raise ... from exc``, :func:`~mellea_ctx._backends.errors.mapped_errors`):
a request that cannot be built raises our own argument error before anything
is sent.
"""

from __future__ import annotations

import abc
import functools
import importlib
import inspect
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from .._core.checks import require_bool, require_int, require_number
from .._core.components import Component, ModelOutputThunk
from .._core.exceptions import InvalidArgumentError
from .._core.protocols import BaseBackend
from .._core.tools import Tool
from .errors import mapped_errors
from .telemetry import observe_request_failure
from .windows import check_window, known_window, server_window


@functools.cache
def _named_parameters(method: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword names ``method`` declares, or None if it takes ``**kwargs``."""
    parameters = inspect.signature(method).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return frozenset(parameter.name for parameter in parameters)


def sdk_arguments(method: Callable[..., Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``options`` as keyword arguments for the SDK's ``method``.

    An SDK's ``create`` names the request fields its version knows; a field it
    does not name (``top_k`` for vLLM through the OpenAI SDK, or ``temperature``
    once an Anthropic SDK stopped listing it) would be a ``TypeError`` before
    any request. Such fields go in the request body through the SDK's own
    ``extra_body`` instead, so the server decides (and refuses a typo with a
    400, which maps to ``BackendError``).
    """
    named = _named_parameters(getattr(method, "__func__", method))
    if named is None:
        return dict(options)
    arguments = {key: value for key, value in options.items() if key in named}
    unnamed = {key: value for key, value in options.items() if key not in named}
    if unnamed and "extra_body" in named:
        arguments["extra_body"] = {**unnamed, **dict(arguments.get("extra_body") or {})}
    else:
        arguments.update(unnamed)
    return arguments


class SDKBackend(BaseBackend):
    """Base of the backends that call a provider through its official SDK."""

    #: The provider's name, for messages.
    provider: ClassVar[str]
    #: The SDK's module name and its root exception class's name.
    sdk_module: ClassVar[str]
    sdk_error: ClassVar[str]
    #: The extra that installs the SDK.
    extra: ClassVar[str]
    #: The SDK's async client class, and the path from a client to the call :meth:`send` makes.
    sdk_client: ClassVar[str]
    sdk_call: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None,
        timeout: float,
        max_retries: int,
        model_options: Mapping[str, Any] | None,
        context_window: int | Literal["server"] | None = None,
        reasoning: bool | None = None,
    ) -> None:
        self.sdk()
        name = type(self).__name__
        if not isinstance(model, str) or not model:
            msg = f"{name}: model={model!r} must be a model name"
            raise InvalidArgumentError(msg)
        require_number(name, "timeout", timeout, minimum=0, above=True, unit="seconds")
        require_int(name, "max_retries", max_retries)
        self.model = model
        self.base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self.model_options = _no_stream(name, "model_options", dict(model_options or {}))
        none = "(guess from the model name whether it takes a reasoning effort)"
        require_bool(name, "reasoning", reasoning, none=none)
        self.reasoning = reasoning
        self._ask_server = context_window == "server"
        explicit = None if self._ask_server else context_window
        self._context_window = check_window(name, explicit)
        self._window_looked_up = explicit is not None

    @property
    def context_window(self) -> int | None:
        """The model's window in tokens: as given; with ``context_window="server"``,
        what the server reports (llama.cpp's ``/props``, read once); else the model's
        known default; else ``None`` (unknown)."""
        if not self._window_looked_up:
            self._window_looked_up = True
            window = None
            if self._ask_server and self.base_url is not None:
                window = server_window(self.base_url)
            if window is None:
                window = known_window(self.model)
            self._context_window = window
        return self._context_window

    @classmethod
    def sdk(cls) -> Any:
        """Import and return the provider's SDK module, or say how to install it."""
        try:
            return importlib.import_module(cls.sdk_module)
        except ModuleNotFoundError as exc:
            install = f"pip install '.[{cls.extra}]' in the mellea-ctx clone"
            msg = f"{cls.__name__} needs the {cls.sdk_module} SDK: {install}"
            raise InvalidArgumentError(msg) from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        """Send ``messages`` (and ``tools``) to the provider and return its answer.

        ``options`` go over the backend's own ``model_options``.

        Raises:
            BackendError: A subclass for each provider failure (see
                :mod:`mellea_ctx._backends.errors`), chained to the original.
        """
        sdk = self.sdk()
        options = {**self.model_options, **options}
        _no_stream(f"{type(self).__name__}.generate", "model_options", options)
        effort = options.pop("reasoning_effort", None)
        if effort is not None and self.takes_reasoning_effort():
            self.send_reasoning_effort(options, effort)
        request = self.request(messages, options, tools)
        failed = functools.partial(observe_request_failure, self)
        with mapped_errors(self.provider, getattr(sdk, self.sdk_error), failed):
            response = await self.send(sdk, request)
        return self.parse(response)

    def takes_reasoning_effort(self) -> bool:
        """Whether requests carry the ``reasoning_effort`` option, translated for the SDK.

        ``reasoning=True`` / ``False`` at construction decides; by default the
        model name does (:meth:`model_takes_reasoning_effort`). When it is
        false, the option is dropped, so a summarizer's default ``"low"`` never
        breaks a model that has no such control.
        """
        if self.reasoning is not None:
            return self.reasoning
        return self.model_takes_reasoning_effort(self.model)

    @classmethod
    def model_takes_reasoning_effort(cls, model: str) -> bool:
        """Whether ``model``, by its name, has a reasoning-effort control; none by default."""
        return False

    @abc.abstractmethod
    def send_reasoning_effort(self, options: dict[str, Any], effort: str) -> None:
        """Put ``effort`` into ``options`` the way the SDK expects."""

    @abc.abstractmethod
    def request(
        self, messages: Sequence[Component], options: dict[str, Any], tools: Sequence[Tool]
    ) -> dict[str, Any]:
        """Return the request's fields (``model``, the history, ``options``...); no I/O.

        Raises:
            InvalidComponentError: For what cannot be written (not a component...).
        """

    async def send(self, sdk: Any, request: dict[str, Any]) -> Any:
        """Send ``request`` with a client opened (and closed) for it; return the raw response.

        The client is ``sdk_client`` and the call ``sdk_call`` (the request's
        fields the call does not take are left out, see :func:`sdk_arguments`).
        A new client per call serves any event loop, the blocking bridge's
        short-lived ones included.
        """
        async with getattr(sdk, self.sdk_client)(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self._timeout,
            max_retries=self._max_retries,
        ) as client:
            create = operator.attrgetter(self.sdk_call)(client)
            return await create(**sdk_arguments(create, request))

    @abc.abstractmethod
    def parse(self, response: Any) -> ModelOutputThunk:
        """Return the response as a ``ModelOutputThunk``; raise ``MalformedResponseError``."""


def _no_stream(owner: str, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Refuse ``stream``: the backends read whole answers, and a stream would be sent, billed,
    and then fail to parse."""
    if options.get("stream"):
        msg = (
            f"{owner}: {name} has stream={options['stream']!r}, but the backends read whole "
            "answers (a summary is used only once complete); drop the stream option"
        )
        raise InvalidArgumentError(msg)
    return options
