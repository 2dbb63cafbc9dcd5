"""``ToolCall`` and ``Usage``: the two values an assistant output carries besides its parts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs
from pyrsistent import PMap

from .checks import field_error, require_int, text_validator
from .exceptions import InvalidComponentError
from .parts import EMPTY, to_extra
from .reprs import short_repr

#: The largest count a component holds (tokens, messages): an int64, as stores and JSON
#: readers elsewhere expect; Python's str() refuses ints past 4,300 digits anyway.
MAX_COUNT: Final = 2**63 - 1


def _json_arguments(value: object) -> object:
    if not isinstance(value, Mapping):
        return value
    try:  # NaN and Infinity are not JSON: a provider would reject them
        return json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        msg = (
            f"ToolCall: arguments={short_repr(value)} cannot be written as JSON ({reason}); "
            "pass a JSON string or a mapping of JSON values (str, int, finite float, bool, "
            "None, lists and mappings of those)"
        )
        raise InvalidComponentError(msg) from exc


@attrs.define(frozen=True, slots=True, repr=False)
class ToolCall:
    """One function call an assistant asks for.

    Args:
        id: The provider's id for the call; the tool result names it.
        name: The function's name.
        arguments: The arguments as a JSON string, as the wire format carries
            them. A mapping is accepted and serialised with :func:`json.dumps`.

    Raises:
        InvalidComponentError: For an empty ``id`` or ``name``, non-string
            arguments, or a mapping that is not JSON (an object, ``NaN``, a
            cycle, nesting too deep to write).

    Examples:
        >>> ToolCall("call_1", "read_file", {"path": "a.py"}).arguments
        '{"path": "a.py"}'
    """

    id: str = attrs.field(validator=text_validator("ToolCall", allow_empty=False))
    name: str = attrs.field(validator=text_validator("ToolCall", allow_empty=False))
    arguments: str = attrs.field(
        default="{}", converter=_json_arguments, validator=text_validator("ToolCall")
    )
    #: Keys the provider sent on the call that we do not model (``cache_control``, ...).
    extra: PMap[str, Any] = attrs.field(default=EMPTY, kw_only=True, converter=to_extra)


@attrs.define(frozen=True, slots=True)
class Usage:
    """Token usage a provider reported for one generation.

    ``prompt_tokens`` is the whole prompt, cached parts included.
    ``cache_read_tokens`` are the prompt tokens served from the provider's
    prompt cache (OpenAI ``cached_tokens``, Anthropic
    ``cache_read_input_tokens``) and ``cache_write_tokens`` those written to
    it (Anthropic ``cache_creation_input_tokens``; OpenAI does not report
    writes); ``None`` when the provider did not say.

    Examples:
        >>> Usage(prompt_tokens=120, completion_tokens=30).total_tokens
        150
        >>> Usage(prompt_tokens=1000, completion_tokens=5, cache_read_tokens=900).cache_read_tokens
        900
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int = attrs.field()
    cache_read_tokens: int | None = attrs.field(default=None, kw_only=True)
    cache_write_tokens: int | None = attrs.field(default=None, kw_only=True)

    @total_tokens.default
    def _sum(self) -> int:
        self._check("prompt_tokens", "completion_tokens")  # before adding them up
        return self.prompt_tokens + self.completion_tokens

    def __attrs_post_init__(self) -> None:
        self._check("prompt_tokens", "completion_tokens", "total_tokens")
        for field in ("cache_read_tokens", "cache_write_tokens"):
            if getattr(self, field) is not None:
                self._check(field)
        cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
        if cached > self.prompt_tokens:
            # The cache serves or stores part of the prompt, never more than all of it.
            value = (self.cache_read_tokens, self.cache_write_tokens)
            expected = (
                f"(read, written) adds up to {cached}, more than prompt_tokens={self.prompt_tokens}"
            )
            fix = "prompt_tokens counts the whole prompt, cached tokens included"
            raise field_error(
                "Usage", "cache_read_tokens, cache_write_tokens", value, expected, fix
            )

    def _check(self, *fields: str) -> None:
        for field in fields:
            value = getattr(self, field)
            if type(value) is int and 0 <= value <= MAX_COUNT:  # the common case, kept fast
                continue
            fix = "pass the provider's count"
            require_int(
                "Usage", field, value, maximum=MAX_COUNT, fix=fix, error=InvalidComponentError
            )
