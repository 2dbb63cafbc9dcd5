"""Counting tokens the way a provider bills them.

A :class:`TokenCounter` turns one component into a token count. The default,
:class:`TiktokenCounter`, encodes text with tiktoken's ``o200k_base`` (the
GPT-4o family's vocabulary), loaded offline, and adds the per-message overhead
of OpenAI's chat format. Pass any object with a ``count(component) -> int``
method to use a provider's own tokenizer instead.

Counts are memoized on the component itself, per counter: components are
immutable, so a session encodes each message once however often its total is
read. :func:`count_memoized` is that cached path.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import attrs

from .components import Component
from .encoding import load_o200k_base
from .exceptions import InvalidArgumentError
from .image_tokens import ImageFormula, image_tokens
from .parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    OpaquePart,
    Part,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
    thaw_json,
)

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "REPLY_PRIMING_TOKENS",
    "TiktokenCounter",
    "TokenCounter",
    "count_memoized",
    "default_counter",
]

#: Tokens OpenAI's chat format adds once per request to prime the reply.
#: Not part of any component, so not part of ``ChatContext.token_count``.
REPLY_PRIMING_TOKENS = 3


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens one component costs in a request.

    Implementations must be deterministic: the same component always gets the
    same count, because counts are memoized per component.
    """

    def count(self, component: Component) -> int:
        """Return the tokens ``component`` adds to a request."""
        ...


#: Text longer than this is encoded in pieces (see :func:`_encoded_length`).
_PIECE: Final = 1 << 20


def _encoded_length(encode: Callable[[str], list[int]], text: str) -> int:
    r"""``len(encode(text))``, without holding the token list of a huge text at once.

    A whole transcript (a 100,000-message summary request) encodes to tens of
    millions of tokens: a list of int objects of about 36 bytes each, most of
    the memory of the request. Past :data:`_PIECE` characters the text is
    encoded in pieces cut just before a ``[`` that follows a newline, where
    ``o200k_base``'s pre-tokenizer always ends a piece (no pattern of it puts
    a newline and a following ``[`` in one piece: letters and digits exclude
    newlines, punctuation takes only ``\r``, ``\n`` and ``/`` after its
    newlines, whitespace only whitespace), and BPE never merges across
    pre-tokenizer pieces: the sum is exactly the whole text's count.
    """
    if len(text) <= _PIECE:
        return len(encode(text))
    total = 0
    start = 0
    while True:
        cut = text.find("\n[", start + _PIECE)
        if cut < 0:
            return total + len(encode(text[start:]))
        total += len(encode(text[start : cut + 1]))
        start = cut + 1


@attrs.define(frozen=True, slots=True)
class TiktokenCounter:
    """The default counter: tiktoken ``o200k_base`` plus OpenAI's chat overhead.

    A message costs ``per_message`` tokens of framing, plus its role, its
    content, and ``per_name`` more tokens with its name when it has one (the
    formula OpenAI documents for chat models). On top of that:

    * each tool call costs its function name, its JSON arguments and
      ``per_tool_call`` tokens of framing (providers do not publish this
      framing; 3 is an estimate);
    * each part beyond text costs what it sends (see
      :mod:`mellea_ctx._core.image_tokens` for images):

      - an image with a known ``width`` and ``height``: the provider's
        published formula (``images="openai"``: 85 + 170 per 512 px tile
        after OpenAI's resizing, 85 at ``detail="low"``;
        ``images="anthropic"``: width * height / 750 after Anthropic's
        resizing); with no size, ``image_tokens`` when set, else the
        formula's bound (1445 for OpenAI, 1600 for Anthropic). Images are
        never downloaded or decoded;
      - thinking: its encoded text plus its encoded signature; redacted
        thinking: its encoded data (both travel back to the provider);
      - a refusal: its encoded text; an opaque provider block: its encoded
        JSON;
      - a document or audio clip: its encoded text, name, URL or file id,
        plus one token per 4 base64 characters of inline data (an
        estimate: providers bill a PDF per page, which only parsing it
        would tell).

    Text is encoded with ``encode_ordinary``, so text that looks like a
    special token (``<|endoftext|>``) is counted as the text it is.

    Args:
        per_message: Framing tokens per message.
        per_name: Extra tokens when a message carries a ``name``.
        per_tool_call: Framing tokens per tool call.
        image_tokens: Tokens charged per image of unknown size; ``None``
            charges the formula's bound.
        images: Whose formula prices images: ``"openai"`` or ``"anthropic"``.

    Examples:
        >>> from mellea_ctx import Message
        >>> TiktokenCounter().count(Message("user", "Hello there"))
        6
    """

    per_message: int = 3
    per_name: int = 1
    per_tool_call: int = 3
    image_tokens: int | None = None
    images: ImageFormula = "openai"

    def __attrs_post_init__(self) -> None:
        for field in ("per_message", "per_name", "per_tool_call", "image_tokens"):
            value = getattr(self, field)
            if field == "image_tokens" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                msg = f"TiktokenCounter: {field}={value!r} must be an int >= 0"
                raise InvalidArgumentError(msg)
        if self.images not in ("openai", "anthropic"):
            msg = (
                f"TiktokenCounter: images={self.images!r} must be 'openai' or 'anthropic' "
                "(whose published formula prices an image)"
            )
            raise InvalidArgumentError(msg)

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The ``o200k_base`` encoding, loaded on first use and shared by every counter."""
        return load_o200k_base()

    def count_text(self, text: str) -> int:
        """Return the number of ``o200k_base`` tokens in ``text``.

        Examples:
            >>> TiktokenCounter().count_text("Hello there")
            2
        """
        return _encoded_length(self.encoding.encode_ordinary, text) if text else 0

    def count(self, component: Component) -> int:
        """Return the tokens ``component`` costs, framing included (not memoized)."""
        encode = load_o200k_base().encode_ordinary
        # Each role name is a single o200k_base token.
        total = self.per_message + 1
        text = component.content
        if text:
            total += len(encode(text)) if len(text) <= _PIECE else _encoded_length(encode, text)
        name = component.name
        if name:
            total += self.per_name + len(encode(name))
        for call in component.tool_calls:
            total += self.per_tool_call + len(encode(call.name)) + len(encode(call.arguments))
        parts = component.parts
        if len(parts) > 1 or (parts and type(parts[0]) is not TextPart):
            total += self._parts(parts, lambda text: len(encode(text)) if text else 0)
        return total

    def _parts(self, parts: tuple[Part, ...], size: Callable[[str], int]) -> int:
        """The tokens of every part but text (text is counted as the text view)."""
        total = 0
        for part in parts:
            kind = type(part)
            if kind is TextPart:
                continue
            if kind is ImagePart:
                assert isinstance(part, ImagePart)
                total += image_tokens(
                    part.width, part.height, part.detail, self.images, self.image_tokens
                )
            elif kind is ThinkingPart:
                assert isinstance(part, ThinkingPart)
                total += size(part.text) + size(part.signature or "")
            elif kind is RedactedThinkingPart:
                assert isinstance(part, RedactedThinkingPart)
                total += size(part.data)
            elif kind is RefusalPart:
                assert isinstance(part, RefusalPart)
                total += size(part.text)
            elif kind is OpaquePart:
                assert isinstance(part, OpaquePart)
                total += size(json.dumps(thaw_json(part.block), ensure_ascii=False))
            elif kind is DocumentPart:
                assert isinstance(part, DocumentPart)
                for text in (part.text, part.name, part.url, part.file_id):
                    total += size(text or "")
                total += _data_tokens(part.data)
            elif kind is AudioPart:
                assert isinstance(part, AudioPart)
                total += size(part.id or "") + _data_tokens(part.data)
        return total

    def bound(self, component: Component) -> int:
        """Return an upper bound of :meth:`count` without encoding anything.

        Every ``o200k_base`` token covers at least one byte of UTF-8 text, so
        the text's byte length bounds its token count; framing is added as
        :meth:`count` adds it. Costs a length, not an encode.

        Examples:
            >>> from mellea_ctx import Message
            >>> m = Message("user", "Hello there")
            >>> TiktokenCounter().count(m) <= TiktokenCounter().bound(m)
            True
        """
        total = self.per_message + 1 + _utf8_length(component.content)
        name = component.name
        if name:
            total += self.per_name + _utf8_length(name)
        for call in component.tool_calls:
            total += self.per_tool_call + _utf8_length(call.name) + _utf8_length(call.arguments)
        parts = component.parts
        if len(parts) > 1 or (parts and type(parts[0]) is not TextPart):
            total += self._parts(parts, _utf8_length)
        return total


def _data_tokens(data: str | None) -> int:
    """Inline base64 data: one token per 4 characters (an estimate; see the class docs)."""
    return math.ceil(len(data) / 4) if data else 0


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@functools.cache
def default_counter() -> TiktokenCounter:
    """Return the process-wide default :class:`TiktokenCounter`."""
    return TiktokenCounter()


def count_memoized(counter: TokenCounter, component: Component) -> int:
    """Return ``counter.count(component)``, computing it at most once per pair.

    The count is cached on the component (a hidden slot that is not an attrs
    field, so invisible to equality, hashing, ``asdict`` and pickling), keyed by
    the counter's identity.
    """
    memo: tuple[tuple[object, int], ...] = getattr(component, "_token_memo", ())
    for owner, tokens in memo:
        if owner is counter:
            return tokens
    tokens = counter.count(component)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        msg = (
            f"{type(counter).__name__}.count({component!r}) returned {tokens!r}; "
            "a TokenCounter must return an int >= 0"
        )
        raise InvalidArgumentError(msg)
    # A benign race: two threads may both compute and store the same number.
    object.__setattr__(component, "_token_memo", (*memo, (counter, tokens)))
    return tokens


def count_all(counter: TokenCounter, components: Iterable[Component]) -> int:
    """Return the memoized total of ``components`` under ``counter``."""
    return sum(count_memoized(counter, component) for component in components)
