"""SupersededReadsCompactor: an older read of a file the agent read again is cleared.

Coding agents read the same file many times (before and after each edit);
only the newest read says what the file holds now, and the older ones
mislead as well as cost. Each older result becomes a
:class:`~mellea_ctx.ClearedToolResult` that names the later call, so the
pairing stays whole and the model knows where the current content is. No
model runs, so it rides inline; like clearing, it waits until at least
``min_clear_tokens`` would go, since each change rewrites the cached prefix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

import attrs
from pyrsistent import PMap, pmap

from .._core.boundaries import prefix_end
from .._core.checks import require_callable, require_int
from .._core.components import Component, ToolMessage
from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate, pin_system
from .clear_results import ClearingCompactor, open_exchange_start
from .records import RecordHook
from .window import validate_pin

if TYPE_CHECKING:
    from .._core.context import ChatContext


def _reads(value: object) -> PMap[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        msg = (
            f"SupersededReadsCompactor: reads={value!r} must map tool names to the argument "
            "that names the file, such as {'read_file': 'path'}"
        )
        raise InvalidArgumentError(msg)
    return pmap(value)


def _target(arguments: str, key: str) -> str | None:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return None
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) and found else None


@attrs.define(frozen=True, slots=True)
class SupersededReadsCompactor(ClearingCompactor):
    """Clear the results of reads that a later read of the same file supersedes.

    A read is a call of a tool named in ``reads``; the file is the argument
    ``reads`` names for it. For each file the newest read stays whole; older
    ones (outside the pinned prefix and an exchange still waiting for
    results, and only when they succeeded) become placeholders that name the
    later call. A failed newer read supersedes nothing.

    Args:
        reads: Tool name to the argument that names the file (default:
            ``{"read_file": "path"}``).
        min_clear_tokens: Clear only when at least this many tokens would go.
        pin_predicate: Where the protected prefix ends.
        on_record: Receives a :class:`~mellea_ctx.CompactionRecord` per clearing.

    Raises:
        InvalidArgumentError: For a bad mapping, count or pin.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, ToolCall, ToolMessage
        >>> ctx = ChatContext()
        >>> for i in range(2):
        ...     call = ToolCall(f"c{i}", "read_file", '{"path": "a.py"}')
        ...     ctx = ctx.add(Message("assistant", "", tool_calls=[call]))
        ...     ctx = ctx.add(ToolMessage("x = 1\\n" * 100, tool_call_id=f"c{i}", name="read_file"))
        >>> out = SupersededReadsCompactor(min_clear_tokens=0).compact(ctx)
        >>> "read again later (call c1)" in out.as_list()[1].content
        True
    """

    strategy: ClassVar[str] = "SupersededReadsCompactor"
    reads: PMap[str, str] = attrs.field(
        factory=lambda: pmap({"read_file": "path"}), converter=_reads
    )
    min_clear_tokens: int = attrs.field(default=256, kw_only=True)
    pin_predicate: PinPredicate = attrs.field(default=pin_system, kw_only=True)
    on_record: RecordHook | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        owner = "SupersededReadsCompactor"
        require_int(owner, "min_clear_tokens", self.min_clear_tokens)
        validate_pin(owner, self.pin_predicate)
        require_callable(owner, "on_record", self.on_record, optional=True)

    def superseded(self, items: list[Component]) -> dict[int, str]:
        """Return the indices of superseded read results, each with its placeholder note."""
        p = prefix_end(items, self.pin_predicate)
        stop = open_exchange_start(items)
        # call id -> file read, for every read call
        files: dict[str, str] = {}
        for component in items:
            for call in component.tool_calls:
                key = self.reads.get(call.name)
                target = _target(call.arguments, key) if key is not None else None
                if target is not None:
                    files[call.id] = target
        newest: dict[str, str] = {}  # file -> id of the newest successful read seen so far
        notes: dict[int, str] = {}
        for index in range(len(items) - 1, -1, -1):
            result = items[index]
            call_id = result.tool_call_id
            if call_id is None or call_id not in files or type(result) is not ToolMessage:
                continue
            target = files[call_id]
            if result.is_error:
                continue
            later = newest.get(target)
            if later is None:
                newest[target] = call_id
            elif p <= index < stop:
                notes[index] = f"{target!r} was read again later (call {later}); see that result."
        return notes

    def clearing(self, ctx: ChatContext) -> dict[int, str]:
        """Return what :meth:`ClearingCompactor.steps` clears: :meth:`superseded`, in order."""
        return dict(sorted(self.superseded(ctx.as_list()).items()))
