"""OpenAI Responses API input items in and out, losslessly.

The Responses API sends a conversation as a flat list of *items*: ``message``
items (a role and content parts), ``function_call`` and
``function_call_output`` items paired by ``call_id``, ``reasoning`` items
(often encrypted, which a stateless ``store=false`` agent must send back),
``compaction`` items from the compaction endpoint, custom tool calls, and
the built-in tools' items. Components group what a model produced in one
step, so :func:`from_responses` folds each run of model output into one
:class:`ModelOutputThunk`:

* **a model step** is a run of ``reasoning`` and other model-side items,
  at most one assistant ``message``, then the step's ``function_call`` /
  ``custom_tool_call`` items. A reasoning item becomes a
  :class:`ThinkingPart` (``provider="openai"``: its summary as text, its
  ``encrypted_content`` as ``signature``, every other key in ``extra``); any
  other model-side item (``compaction``, ``web_search_call``, an item type
  we do not know) becomes an :class:`OpaquePart` with
  ``provider="openai-responses"``, the whole item verbatim. The message's
  own keys (``id``, ``status``, ``type``, ``role``) are the thunk's
  ``extra``; its content parts follow the item parts. Because the reasoning
  sits in the same component as the calls it preceded, no compactor can keep
  one without the other: they drop or keep components whole.
* a ``function_call_output`` (or ``custom_tool_call_output``) is a
  :class:`ToolMessage`; a user, system or developer ``message`` is a
  :class:`Message`.

:func:`to_responses` writes them back, so ``to_responses(from_responses(x))``
equals ``x`` for every list of items (a property test checks it); keys are
written back through ``extra``. Only the fields the SDK's item and part
types define (:data:`ITEM_FIELDS`, :data:`PART_FIELDS`) are written: parts
and keys read from another provider that the Responses API cannot take
(Anthropic thinking, ``cache_control``, ``citations``, a Chat tool call's
``index``) are left out and reported through ``lost=``, and our own notes
(``mellea_ctx``) never reach a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core import parts as pt
from ..._core.calls import ToolCall
from ..._core.components import Component, Message, ModelOutputThunk, ToolMessage
from ..._core.exceptions import InvalidComponentError
from ..._core.reprs import short_repr
from ..notes import note, provider_keys, report_losses, with_notes
from ..reading import invalid, other_keys

__all__ = [
    "ITEM_FIELDS",
    "ITEM_PROVIDER",
    "PART_FIELDS",
    "PROVIDER",
    "answer_keys",
    "from_responses",
    "is_custom_call",
    "to_responses",
]

#: ``provider`` of the parts read from Responses content and reasoning items.
PROVIDER: Final = "openai"
#: ``provider`` of an :class:`OpaquePart` that holds one whole Responses item.
ITEM_PROVIDER: Final = "openai-responses"
#: Item types that are a model's call of a tool we run, and the output item answering each.
CALLS: Final = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}
OUTPUTS: Final = {output: call for call, output in CALLS.items()}
# The fields below are the openai SDK's input item and content part TypedDicts
# (``openai.types.responses``), by item type (tests/test_wire_gemini_responses.py checks
# them against the SDK). The API refuses a key outside them: "Unknown parameter:
# 'input[0].content[0].cache_control'."
#: The fields of each input item type we write from components.
ITEM_FIELDS: Final = {
    # a user, system or developer message (EasyInputMessageParam, Message): no "id"
    "message": frozenset({"type", "role", "content", "status", "phase"}),
    # an assistant message (ResponseOutputMessageParam)
    "output_message": frozenset({"type", "role", "content", "id", "status", "phase"}),
    "function_call": frozenset(
        {"type", "call_id", "name", "arguments", "id", "status", "namespace", "caller", "async"}
    ),
    "function_call_output": frozenset(
        {"type", "call_id", "output", "id", "status", "caller", "name", "namespace"}
    ),
    "custom_tool_call": frozenset(
        {"type", "call_id", "name", "input", "id", "namespace", "caller", "async"}
    ),
    "custom_tool_call_output": frozenset({"type", "call_id", "output", "id", "caller"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
    "compaction": frozenset({"type", "encrypted_content", "id"}),
}
#: The fields of each content part type (of a message, or of a tool call's output).
PART_FIELDS: Final = {
    "input_text": frozenset({"type", "text", "prompt_cache_breakpoint"}),
    "input_image": frozenset({"type", "detail", "file_id", "image_url", "prompt_cache_breakpoint"}),
    "input_file": frozenset(
        {
            "type",
            "detail",
            "file_data",
            "file_id",
            "file_url",
            "filename",
            "prompt_cache_breakpoint",
        }
    ),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
}


def is_custom_call(call: ToolCall) -> bool:
    """Whether ``call`` is a Responses ``custom_tool_call``: free-form text input, not JSON.

    Examples:
        >>> is_custom_call(ToolCall("c1", "patch", "*** Begin", extra={"type": "custom_tool_call"}))
        True
    """
    return call.extra.get("type") == "custom_tool_call"


def answer_keys(call: ToolCall) -> dict[str, Any]:
    """Return the ``extra`` a :class:`ToolMessage` answering ``call`` needs to answer in kind.

    A custom tool call is answered by a ``custom_tool_call_output``: the
    API refuses a ``function_call_output`` for it.

    Examples:
        >>> answer_keys(ToolCall("c1", "patch", "x", extra={"type": "custom_tool_call"}))
        {'type': 'custom_tool_call_output'}
        >>> answer_keys(ToolCall("c2", "ls"))
        {}
    """
    return {"type": CALLS["custom_tool_call"]} if is_custom_call(call) else {}


def _default_text_type(role: str) -> str:
    return "output_text" if role == "assistant" else "input_text"


def _read_part(block: object, role: str, where: str) -> pt.Part:
    """One content part; anything we cannot model exactly stays an opaque part."""
    if not isinstance(block, Mapping):
        raise invalid(where, f"{short_repr(block)} must be an object with a 'type'")
    kind = block.get("type")
    try:
        if kind in ("input_text", "output_text") and type(block.get("text")) is str:
            rest = (
                other_keys(block, "text")
                if kind != _default_text_type(role)
                else other_keys(block, "type", "text")
            )
            return pt.TextPart(block["text"], extra=rest)
        if kind == "refusal" and type(block.get("refusal")) is str:
            return pt.RefusalPart(block["refusal"], extra=other_keys(block, "type", "refusal"))
        if kind == "input_image":
            return _read_image(block)
        if kind == "input_file":
            return _read_file(block)
    except InvalidComponentError:
        pass
    return pt.OpaquePart(PROVIDER, block)


def _present(block: Mapping[str, Any], key: str) -> str | None:
    value = block.get(key)
    return value if type(value) is str else None


def _kept(block: Mapping[str, Any], modelled: Sequence[str]) -> dict[str, Any]:
    """``block`` without ``type`` and without the modelled keys that hold strings."""
    return {
        key: value
        for key, value in block.items()
        if key != "type" and not (key in modelled and type(value) is str)
    }


def _read_image(block: Mapping[str, Any]) -> pt.Part:
    url, file_id, detail = (_present(block, k) for k in ("image_url", "file_id", "detail"))
    extra = _kept(block, ("image_url", "file_id", "detail"))
    match = pt.DATA_URI.fullmatch(url) if url is not None else None
    if match is not None:
        return pt.ImagePart(
            data=match["data"],
            media_type=match["media"],
            file_id=file_id,
            detail=detail,
            extra=extra,
        )
    return pt.ImagePart(url=url, file_id=file_id, detail=detail, extra=extra)


def _read_file(block: Mapping[str, Any]) -> pt.Part:
    keys = ("file_data", "file_id", "file_url", "filename")
    data, file_id, url, name = (_present(block, k) for k in keys)
    if data is None and file_id is None and url is None:
        return pt.OpaquePart(PROVIDER, block)
    extra = _kept(block, keys)
    match = pt.DATA_URI.fullmatch(data) if data is not None else None
    if match is not None:  # base64 and its type apart, as every other reader gives them
        data, media = match["data"], match["media"]
        return pt.DocumentPart(
            data=data, media_type=media, file_id=file_id, url=url, name=name, extra=extra
        )
    return pt.DocumentPart(data=data, file_id=file_id, url=url, name=name, extra=extra)


def _read_content(content: object, role: str, where: str) -> tuple[tuple[pt.Part, ...], bool]:
    """Parts of a message's (or output's) content, and whether it was a list."""
    if type(content) is str:
        return (pt.TextPart(content),), False
    if isinstance(content, list):
        return tuple(
            _read_part(block, role, f"{where} content[{i}]") for i, block in enumerate(content)
        ), True
    raise invalid(where, f"content={short_repr(content)} must be a string or a list of parts")


def _read_reasoning(item: Mapping[str, Any]) -> pt.ThinkingPart:
    summary = item.get("summary")
    texts = []
    if isinstance(summary, list):
        texts = [
            s["text"] for s in summary if isinstance(s, Mapping) and type(s.get("text")) is str
        ]
    signature = _present(item, "encrypted_content")
    extra = _kept(item, ("encrypted_content",))
    if "summary" not in item:  # written back without one, as it came
        extra = with_notes(extra, summary="absent")
    return pt.ThinkingPart("\n\n".join(texts), signature=signature, provider=PROVIDER, extra=extra)


def _read_call(item: Mapping[str, Any], where: str) -> ToolCall:
    kind = item["type"]
    payload = "arguments" if kind == "function_call" else "input"
    call_id, name, arguments = (item.get(k) for k in ("call_id", "name", payload))
    for field, value in (("call_id", call_id), ("name", name), (payload, arguments)):
        if type(value) is not str or (field != payload and not value):
            expected = "must be a string" if field == payload else "must be a non-empty string"
            raise invalid(where, f"{kind} {field}={short_repr(value)} {expected}")
    known = (
        ("call_id", "name", payload)
        if kind == "custom_tool_call"
        else ("type", "call_id", "name", payload)
    )
    return ToolCall(call_id, name, arguments, extra=other_keys(item, *known))  # type: ignore[arg-type]


def _read_output(item: Mapping[str, Any], where: str) -> ToolMessage:
    call_id = item.get("call_id")
    if type(call_id) is not str or not call_id:
        raise invalid(
            where, f"{item['type']} call_id={short_repr(call_id)} must be a non-empty string"
        )
    if "output" not in item:
        raise invalid(where, f"{item['type']} has no 'output'; pass the tool's result as text")
    parts, structured = _read_content(item["output"], "tool", where)
    known = (
        ("call_id", "output")
        if item["type"] != "function_call_output"
        else ("type", "call_id", "output")
    )
    return ToolMessage(
        parts, tool_call_id=call_id, extra=other_keys(item, *known), structured=structured
    )


class _Step:
    """A model step being read: item parts, at most one message, then calls."""

    def __init__(self) -> None:
        self.reset()

    def begin(self, index: int) -> None:
        """Note ``index`` as the step's first item when nothing is in it yet."""
        if not (self.parts or self.calls or self.message is not None):
            self.start = index

    def reset(self) -> None:
        self.start = 0
        self.parts: list[pt.Part] = []
        self.calls: list[ToolCall] = []
        self.message: dict[str, Any] | None = None
        self.structured = True

    def closed_to(self, kind: str) -> bool:
        """Whether an item of ``kind`` cannot join this step and must start the next."""
        if kind == "call":
            return False
        return bool(self.calls) or self.message is not None

    def flush(self, out: list[Component], starts: list[int]) -> None:
        if self.parts or self.calls or self.message is not None:
            starts.append(self.start)
            out.append(
                ModelOutputThunk(
                    parts=self.parts,
                    tool_calls=self.calls,
                    extra=self.message or {},
                    structured=self.structured,
                )
            )
        self.reset()


def _kind(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def from_responses(items: Iterable[Mapping[str, Any]]) -> list[Component]:
    """Return the components of a list of Responses API input (or output) items.

    Args:
        items: The items, as the ``input`` of ``responses.create`` takes them
            or as a response's ``output`` holds them (plain dicts).

    Returns:
        The components, oldest first: one :class:`ModelOutputThunk` per model
        step (see the module docs), a :class:`ToolMessage` per output item, a
        :class:`Message` per user, system or developer message.

    Raises:
        InvalidContextError: For an item that is not an object, a message
            without a known role or with content that is neither text nor a
            list, or a call or output without its ``call_id``; the error
            names the item (``item 3``) and the field.

    Examples:
        >>> out = from_responses([
        ...     {"role": "user", "content": "Count the files."},
        ...     {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        ...     {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        ...     {"type": "function_call_output", "call_id": "c1", "output": "3 files"},
        ... ])
        >>> [c.role for c in out], out[1].parts[0].signature, out[1].tool_calls[0].id
        (['user', 'assistant', 'tool'], 'gAAA', 'c1')
    """
    return _read(items)[0]


def _read(items: Iterable[Mapping[str, Any]]) -> tuple[list[Component], list[int]]:
    """The components of ``items``, and the index of the first item of each."""
    reader = _Reader()
    for index, item in enumerate(items):
        where = f"item {index}"
        if not isinstance(item, Mapping):
            raise invalid(where, f"{short_repr(item)} must be an object with a 'type' or a 'role'")
        try:
            reader.item(item, index, where)
        except InvalidComponentError as exc:
            raise invalid(where, str(exc)) from exc
    reader.step.flush(reader.out, reader.starts)
    return reader.out, reader.starts


class _Reader:
    """One pass of :func:`from_responses`: the components read, the first item of each,
    and the model step being read."""

    def __init__(self) -> None:
        self.out: list[Component] = []
        self.starts: list[int] = []
        self.step = _Step()

    def item(self, item: Mapping[str, Any], index: int, where: str) -> None:
        """Read item ``index``, by its kind."""
        kind = _kind(item)
        if kind == "message" and item.get("role") == "assistant":
            self.assistant(item, index, where)
        elif kind == "message":
            self.message(item, index, where)
        elif kind in CALLS:
            self.step.begin(index)
            self.step.calls.append(_read_call(item, where))
        elif kind in OUTPUTS:
            self.step.flush(self.out, self.starts)
            self.add(_read_output(item, where), index)
        else:
            self.model_item(item, kind, index)

    def add(self, component: Component, index: int) -> None:
        self.out.append(component)
        self.starts.append(index)

    def assistant(self, item: Mapping[str, Any], index: int, where: str) -> None:
        """An assistant message: the step's one message (a second one starts the next step)."""
        step = self.step
        if step.closed_to("message"):
            step.flush(self.out, self.starts)
        step.begin(index)
        parts, step.structured = _read_content(item.get("content"), "assistant", where)
        step.parts += parts
        step.message = other_keys(item, "content")

    def message(self, item: Mapping[str, Any], index: int, where: str) -> None:
        """A user, system or developer message, which ends the step."""
        self.step.flush(self.out, self.starts)
        role = item.get("role")
        parts, structured = _read_content(item.get("content"), str(role), where)
        extra = other_keys(item, "role", "content")
        self.add(Message(role, parts, extra=extra, structured=structured), index)  # type: ignore[arg-type]

    def model_item(self, item: Mapping[str, Any], kind: str | None, index: int) -> None:
        """Another item (reasoning, an opaque one) joins the step, as a part."""
        step = self.step
        if step.closed_to("item"):
            step.flush(self.out, self.starts)
        reasoning = kind == "reasoning" and item.get("id") is not None
        part = _read_reasoning(item) if reasoning else pt.OpaquePart(ITEM_PROVIDER, item)
        step.begin(index)
        step.parts.append(part)


# -- writing -----------------------------------------------------------------------------------


def _given(fields: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The ``(key, value)`` pairs whose value is given (not ``None``), in order."""
    return {key: value for key, value in fields if value is not None}


class _Writer:
    """One pass of :func:`to_responses`: what it could not carry, by component."""

    def __init__(self) -> None:
        self.lost: list[str] = []
        self.where = ""

    def keys(self, extra: Any, kind: str, fields: Mapping[str, frozenset[str]]) -> dict[str, Any]:
        """The provider keys of ``extra`` a ``kind`` object has; the others are reported."""
        allowed = fields.get(kind, frozenset())
        kept = {}
        for key, value in provider_keys(extra).items():
            if key in allowed and (key != "type" or value == kind.removeprefix("output_")):
                kept[key] = value
            else:
                self.lost.append(
                    f"{self.where}: key {key!r} (a Responses {kind} has no such field)"
                )
        return kept

    def part(self, part: pt.Part, role: str) -> dict[str, Any] | None:
        match part:
            case pt.TextPart():
                return self.text(part, role)
            case pt.RefusalPart():
                return {
                    "type": "refusal",
                    "refusal": part.text,
                    **self.keys(part.extra, "refusal", PART_FIELDS),
                }
            case pt.ImagePart():
                return self.image(part)
            case pt.DocumentPart():
                return self.document(part, role)
            case pt.OpaquePart() if part.provider == PROVIDER and part.type in PART_FIELDS:
                # verbatim; Chat's parts are "openai" too, and only the types the Responses
                # API defines for content can go back (Chat's input_audio cannot)
                return pt.thaw_json(part.block)  # type: ignore[no-any-return]
            case pt.OpaquePart():
                what = f"an opaque {part.provider} block of type {part.type!r}"
                self.lost.append(f"{self.where}: {what}")
                return None
            case pt.ThinkingPart() | pt.RedactedThinkingPart():
                provider = getattr(part, "provider", "anthropic")
                self.lost.append(f"{self.where}: a thinking part from {provider!r} in a message")
                return None
            case pt.AudioPart():
                self.lost.append(f"{self.where}: an audio part (Responses input takes none)")
                return None
            case _:
                pt.assert_never(part)

    def text(self, part: pt.TextPart, role: str) -> dict[str, Any]:
        """An ``input_text`` or ``output_text`` part: the type it was read as, else the role's."""
        given = provider_keys(part.extra).get("type")
        kind = given if given in ("input_text", "output_text") else _default_text_type(role)
        return {"type": kind, "text": part.text, **self.keys(part.extra, kind, PART_FIELDS)}

    def image(self, part: pt.ImagePart) -> dict[str, Any]:
        url = part.url if part.url is not None else part.data_uri
        fields = (("image_url", url), ("file_id", part.file_id), ("detail", part.detail))
        block = {"type": "input_image", **_given(fields)}
        return {**block, **self.keys(part.extra, "input_image", PART_FIELDS)}

    def document(self, part: pt.DocumentPart, role: str) -> dict[str, Any] | None:
        """An ``input_file`` part; a document given only as text is a text part."""
        if part.text is not None and part.data is part.file_id is part.url is None:
            return {"type": _default_text_type(role), "text": part.text}
        if part.data is part.file_id is part.url is None:
            self.lost.append(f"{self.where}: a document with no data, text, url or id")
            return None
        sources = (
            ("file_data", _file_data(part)),
            ("file_id", part.file_id),
            ("file_url", part.url),
            ("filename", part.name),
        )
        block = {"type": "input_file", **_given(sources)}
        return {**block, **self.keys(part.extra, "input_file", PART_FIELDS)}

    def content(self, parts: Sequence[pt.Part], role: str, structured: bool) -> str | list[Any]:
        if (
            not structured
            and len(parts) == 1
            and type(parts[0]) is pt.TextPart
            and not provider_keys(parts[0].extra)
        ):
            return parts[0].text
        if not structured and not parts:
            return ""
        return [block for block in (self.part(p, role) for p in parts) if block is not None]

    def item_part(self, part: pt.Part) -> dict[str, Any] | None:
        if isinstance(part, pt.OpaquePart):
            return pt.thaw_json(part.block)  # type: ignore[no-any-return]
        if not isinstance(part, pt.ThinkingPart) or part.provider != PROVIDER:
            provider = getattr(part, "provider", "anthropic")
            # another provider's reasoning cannot be verified by OpenAI
            self.lost.append(f"{self.where}: a thinking part from {provider!r}")
            return None
        if "id" not in part.extra:  # Chat's reasoning_content: no item to send back
            self.lost.append(f"{self.where}: reasoning without a Responses item id")
            return None
        item: dict[str, Any] = {
            "type": "reasoning",
            **self.keys(part.extra, "reasoning", ITEM_FIELDS),
        }
        if note(part.extra, "summary") != "absent":
            summary = [{"type": "summary_text", "text": part.text}] if part.text else []
            item.setdefault("summary", summary)
        if part.signature is not None:
            item["encrypted_content"] = part.signature
        return item

    def call(self, call: ToolCall) -> dict[str, Any]:
        given = provider_keys(call.extra).get("type")
        kind = given if given in CALLS else "function_call"
        payload = "input" if kind == "custom_tool_call" else "arguments"
        extra = self.keys(call.extra, kind, ITEM_FIELDS)
        return {
            "type": kind,
            "call_id": call.id,
            "name": call.name,
            payload: call.arguments,
            **extra,
        }

    def step(self, component: Component) -> list[dict[str, Any]]:
        parts = component.parts
        lead = 0
        while lead < len(parts) and _is_item_part(parts[lead]):
            lead += 1
        items = [item for item in map(self.item_part, parts[:lead]) if item is not None]
        extra = self.keys(component.extra, "output_message", ITEM_FIELDS)
        if "role" in extra or parts[lead:]:
            content = self.content(parts[lead:], "assistant", component.structured)
            rest = {key: value for key, value in extra.items() if key != "role"}
            items.append({"role": "assistant", "content": content, **rest})
        items += [self.call(call) for call in component.tool_calls]
        return items

    def output(self, component: Component) -> dict[str, Any]:
        given = provider_keys(component.extra).get("type")
        kind = given if given in OUTPUTS else "function_call_output"
        output = self.content(component.parts, "tool", component.structured)
        if component.is_error:
            self.lost.append(
                f"{self.where}: the is_error flag of the result for {component.tool_call_id!r}"
            )
        extra = self.keys(component.extra, kind, ITEM_FIELDS)
        return {"type": kind, "call_id": component.tool_call_id, "output": output, **extra}

    def message(self, component: Component) -> dict[str, Any]:
        role = component.role
        content = self.content(component.parts, role, component.structured)
        extra = self.keys(component.extra, "message", ITEM_FIELDS)
        return {"role": role, "content": content, **extra}


def _file_data(part: pt.DocumentPart) -> str | None:
    """An ``input_file``'s ``file_data``: a ``data:`` URI when the media type is known."""
    if part.data is None or part.media_type is None:
        return part.data
    return f"data:{part.media_type};base64,{part.data}"


def _is_item_part(part: pt.Part) -> bool:
    if isinstance(part, (pt.ThinkingPart, pt.RedactedThinkingPart)):
        return True
    return isinstance(part, pt.OpaquePart) and part.provider == ITEM_PROVIDER


def to_responses(
    components: Iterable[Component], *, lost: list[str] | None = None
) -> list[dict[str, Any]]:
    """Return ``components`` as Responses API input items (plain dicts).

    Each component is written from what it tells a provider: a tool result
    becomes a ``function_call_output``; an assistant component its reasoning
    and other items, its message, then its calls; any other component a
    message with its role (``CBlock`` and ``ReactInitiator`` as ``user``).

    Args:
        components: The history, oldest first (a ``ChatContext`` works).

    Returns:
        The items, ready for ``client.responses.create(input=...)``.

    Examples:
        >>> from mellea_ctx import Message, ModelOutputThunk, ToolCall, ToolMessage
        >>> to_responses([
        ...     Message("user", "Count the files."),
        ...     ModelOutputThunk(tool_calls=[ToolCall("c1", "ls")]),
        ...     ToolMessage("3 files", tool_call_id="c1"),
        ... ])  # doctest: +NORMALIZE_WHITESPACE
        [{'role': 'user', 'content': 'Count the files.'},
         {'type': 'function_call', 'call_id': 'c1', 'name': 'ls', 'arguments': '{}'},
         {'type': 'function_call_output', 'call_id': 'c1', 'output': '3 files'}]
    """
    items, _, found = _write(components)
    report_losses(lost, found, "to_responses")
    return items


def _write(
    components: Iterable[Component],
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """The items, for each item the index of the component it came from, and the losses."""
    writer = _Writer()
    items: list[dict[str, Any]] = []
    owners: list[int] = []
    for index, component in enumerate(components):
        writer.where = f"component {index}"
        role = component.role
        if role == "tool":
            written = [writer.output(component)]
        elif role == "assistant":
            written = writer.step(component)
        else:
            written = [writer.message(component)]
        items += written
        owners += [index] * len(written)
    return items, owners, writer.lost
