"""Tool search inside the agent loop: which tools each request declares, and how.

:class:`Searching` is built once per run of ``areact`` from its
:class:`~mellea_ctx.ToolSearch` (or ``None``). It decides, per request, the
tools declared and the model options, puts the catalog in the system prompt
when ``catalog="system"``, and clears the session's delivered record after a
compaction. On :class:`~mellea_ctx.AnthropicBackend` it takes the provider's
own path: every deferred tool declared with ``"defer_loading": true`` and the
search answering with ``tool_reference`` blocks, so the request's tool list
never changes and the prompt cache keeps hitting. On any other backend a
deferred tool is declared from the request after the search that found it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._backends.anthropic import AnthropicBackend
from .._core.components import Component, Message
from .._core.tools import Tool
from .delivered import DeliveredTools
from .loop_state import Loop
from .result import SessionLike
from .tool_search import ToolSearch


@attrs.define
class Searching:
    """The tool requests of one run of the loop (never shared between runs).

    Attributes:
        search: The run's tool search, or ``None``.
        delivered: The session's record of delivered definitions, with a search.
        plain: The tools given as ``tools=`` that are not in the search's catalog.
        builtins: ``compact_context`` and ``recall``, when a compactor is configured.
        native: Whether requests take Anthropic's ``defer_loading`` path.
        finder: The run's ``tool_search`` tool, with a search.
    """

    search: ToolSearch | None
    delivered: DeliveredTools | None
    plain: list[Tool]
    builtins: list[Tool]
    native: bool = False
    finder: Tool | None = None

    @classmethod
    def of(
        cls,
        search: ToolSearch | None,
        backend: object,
        session: SessionLike | None,
        loop: Loop,
        tools: Sequence[Tool],
        builtins: Sequence[Tool],
    ) -> Searching:
        """Return the requests of one run: ``tools`` from ``tools=``, ``builtins`` from the loop."""
        if search is None:
            return cls(None, None, list(tools), list(builtins))
        owner = session.session_id if session is not None else f"react-{id(loop):x}"
        delivered = search.delivered(owner)
        catalog = {item.name for item in search.tools}
        plain = [item for item in tools if item.name not in catalog]
        native = isinstance(backend, AnthropicBackend) and bool(search.deferred)
        finder = search.search_tool(delivered, references=native)
        return cls(search, delivered, plain, list(builtins), native, finder)

    @property
    def extra_tools(self) -> list[Tool]:
        """The tools the search adds to the loop's registry: its catalog and its finder."""
        if self.search is None or self.finder is None:
            return []
        return [*self.search.tools, self.finder]

    def after_compaction(self) -> None:
        """Let the model find again the definitions a compaction removed."""
        if self.search is not None and self.delivered is not None:
            self.search.reset_after_compaction(self.delivered)

    def with_catalog(self, messages: Sequence[Component]) -> list[Component]:
        """Return ``messages`` with the catalog as a system message, for ``catalog="system"``.

        The catalog goes right after the leading system messages (a first
        one when there are none); it is part of the request only, never of
        the context or the session.
        """
        text = self.search.catalog_text() if self.search is not None else ""
        items = list(messages)
        if not text:
            return items
        front = 0
        while front < len(items) and items[front].role == "system":
            front += 1
        return [*items[:front], Message("system", text), *items[front:]]

    def request(
        self, model_options: Mapping[str, Any] | None
    ) -> tuple[Mapping[str, Any] | None, list[Tool]]:
        """Return the model options and the tools of the next request."""
        if self.search is None or self.delivered is None:
            return model_options, [*self.plain, *self.builtins]
        if not self.native:
            offered = self.search.offered(self.delivered)
            return model_options, [*self.plain, *offered, *self.builtins]
        definitions = [item.to_anthropic() for item in self.plain]
        definitions += self.search.anthropic_tools()
        definitions += [item.to_anthropic() for item in self.builtins]
        return {**dict(model_options or {}), "tools": definitions}, []
