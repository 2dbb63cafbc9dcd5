"""Counting tokens the way a provider bills them.

A :class:`TokenCounter` turns one component into a token count. The default,
:class:`TiktokenCounter`, encodes text with tiktoken's ``o200k_base`` (the
GPT-4o family's vocabulary), loaded offline, and adds the per-message overhead
of OpenAI's chat format. Pass any object with a ``count(component) -> int``
method to use a provider's own tokenizer instead.

Counts are memoized on the component itself, per counter: components are
immutable, so a session encodes each message once however often its total is
read. :func:`count_memoized` is that cached path.

Encoding time is bounded: tiktoken's byte-pair merge is quadratic in the
length of one pre-tokenized piece, so a run of :data:`LONGEST_PIECE` or more
letters, spaces or punctuation marks (a 50 MB string without spaces) is
counted in slices of that length (:func:`encoded_length`). Text without such a
run, all ordinary prose, code and JSON, is counted exactly as before.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from .checks import require_choice, require_int
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
    assert_never,
    thaw_json,
)

if TYPE_CHECKING:
    import tiktoken

#: Tokens OpenAI's chat format adds once per request to prime the reply.
#: Not part of any component, so not part of ``ChatContext.token_count``.
REPLY_PRIMING_TOKENS = 3


#: Text longer than this is encoded in pieces of at most this many characters. tiktoken's
#: byte-pair merge is quadratic in the length of one pre-tokenized piece (a 50 MB string
#: of letters took minutes whole); a cut where the pre-tokenizer cuts anyway keeps the
#: count exact, so only a stretch of ``LONGEST_PIECE // 2`` characters with no such place
#: (one run of letters, spaces or marks) is cut where it falls, which may move the count
#: by a token per cut: at most one in 4,096 characters, in text no writer produces.
LONGEST_PIECE = 8_192

#: A place where ``o200k_base``'s pre-tokenizer always ends a piece: after a letter or
#: digit, before a space, an ASCII mark other than the apostrophe (which may open a
#: contraction such as ``'s``) or a CJK mark. The piece holding a letter or digit cannot
#: take in such a character, so counting each side apart gives the same total.
_CUT = re.compile(
    r"(?<=[^\W_])[\x00-\x26\x28-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f"
    "\u3000-\u3029\u3030-\u303f\uff01-\uff0f\uff1a-\uff20]"
)


@functools.lru_cache(maxsize=64)
def _cut_length(piece: str) -> int:
    """A piece cut where it fell; a long run repeats them (``"a" * 50_000_000``)."""
    return len(load_o200k_base().encode_ordinary(piece))


def encoded_length(text: str) -> int:
    """Return the ``o200k_base`` token count of ``text``, in time linear in its length.

    Text longer than :data:`LONGEST_PIECE` is counted in pieces cut where the
    tokenizer's own pre-tokenizer cuts, so the count is exact; only a stretch
    of ``LONGEST_PIECE // 2`` characters without such a place is cut where it
    falls (see :data:`LONGEST_PIECE` for the bound).

    Examples:
        >>> encoded_length("Hello there")
        2
        >>> prose = "Hello there, general Kenobi. " * 1_000
        >>> encoded_length(prose) == TiktokenCounter().encoding.encode_ordinary(prose).__len__()
        True
    """
    encode = load_o200k_base().encode_ordinary
    if len(text) <= LONGEST_PIECE:
        return len(encode(text)) if text else 0
    total, at, end = 0, 0, len(text)
    while end - at > LONGEST_PIECE:
        found = _CUT.search(text, at + LONGEST_PIECE // 2, at + LONGEST_PIECE)
        if found is not None:
            total += len(encode(text[at : found.start()]))
            at = found.start()
        else:
            total += _cut_length(text[at : at + LONGEST_PIECE])
            at += LONGEST_PIECE
    return total + len(encode(text[at:]))


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens one component costs in a request.

    Implementations must be deterministic: the same component always gets the
    same count, because counts are memoized per component.
    """

    def count(self, component: Component) -> int:
        """Return the tokens ``component`` adds to a request."""
        ...


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
            require_int("TiktokenCounter", field, value)
        fix = "the two whose published formula prices an image"
        require_choice("TiktokenCounter", "images", self.images, ("openai", "anthropic"), fix=fix)

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
        return encoded_length(text)

    def count(self, component: Component) -> int:
        """Return the tokens ``component`` costs, framing included (not memoized)."""
        return self._framed(component, encoded_length)

    def _framed(self, component: Component, size: Callable[[str], int]) -> int:
        """``component``'s framing plus the ``size`` of each of its texts (count and bound)."""
        # Each role name is a single o200k_base token.
        total = self.per_message + 1
        text = component.content
        if text:
            total += size(text)
        name = component.name
        if name:
            total += self.per_name + size(name)
        for call in component.tool_calls:
            total += self.per_tool_call + size(call.name) + size(call.arguments)
        parts = component.parts
        if len(parts) > 1 or (parts and type(parts[0]) is not TextPart):
            total += self._parts(parts, size)
        return total

    def _parts(self, parts: tuple[Part, ...], size: Callable[[str], int]) -> int:
        """The tokens of every part but text (text is counted as the text view)."""
        total = 0
        for part in parts:
            match part:
                case TextPart():
                    continue
                case ImagePart():
                    total += image_tokens(
                        part.width, part.height, part.detail, self.images, self.image_tokens
                    )
                case ThinkingPart():
                    total += size(part.text) + size(part.signature or "")
                case RedactedThinkingPart():
                    total += size(part.data)
                case RefusalPart():
                    total += size(part.text)
                case OpaquePart():
                    total += size(json.dumps(thaw_json(part.block), ensure_ascii=False))
                case DocumentPart():
                    for text in (part.text, part.name, part.url, part.file_id):
                        total += size(text or "")
                    total += _data_tokens(part.data)
                case AudioPart():
                    total += size(part.id or "") + _data_tokens(part.data)
                case _:
                    assert_never(part)
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
        return self._framed(component, _utf8_length)


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
