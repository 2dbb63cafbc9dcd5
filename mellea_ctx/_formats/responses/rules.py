"""The Responses API's documented rules for a list of input items: :func:`validate_responses`.

Written from the API reference and the official SDK's item types
(``openai.types.responses.response_input_item_param``), not from our reader,
so it judges any item list, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..._core.components import Component
from ..._core.reprs import short_repr
from . import CALLS, ITEM_FIELDS, OUTPUTS, PART_FIELDS

#: Content part types each message role takes, and the field each one must hold as a string.
_INPUT_PARTS: Final = {"input_text": "text", "input_image": None, "input_file": None}
_ASSISTANT_PARTS: Final = {"output_text": "text", "refusal": "refusal"}
_ROLES: Final = ("user", "assistant", "system", "developer")
#: Item types the API documents that a model step produces (besides messages and our calls).
_MODEL_ITEMS: Final = frozenset(
    {
        "reasoning",
        "compaction",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_call",
        "tool_search_call",
    }
)
#: Other documented input item types, checked only for being objects with a ``type``.
_OTHER_ITEMS: Final = frozenset(
    {
        "item_reference",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "mcp_approval_response",
        "tool_search_output",
        "additional_tools",
    }
)


_WANTS: Final = {True: "string", False: "non-empty string"}
_STATUS: Final = ("in_progress", "completed", "incomplete")
#: The JSON type of the optional fields, from the SDK's TypedDicts: a type, or the literals
#: allowed; ``None`` only where the SDK says ``Optional`` (and in a tool output's parts,
#: whose types make every optional field ``Optional``).
_OPTIONAL: Final[dict[str, dict[str, tuple[Any, ...]]]] = {
    "message": {"status": _STATUS, "phase": ("commentary", "final_answer", None)},
    "output_message": {
        "id": (str,),
        "status": _STATUS,
        "phase": ("commentary", "final_answer", None),
    },
    "function_call": {
        "id": (str,),
        "status": _STATUS,
        "namespace": (str,),
        "caller": (dict,),
        "async": (bool,),
    },
    "function_call_output": {
        "id": (str, None),
        "status": (*_STATUS, None),
        "name": (str, None),
        "namespace": (str, None),
        "caller": (dict, None),
    },
    "custom_tool_call": {"id": (str,), "namespace": (str,), "caller": (dict,), "async": (bool,)},
    "custom_tool_call_output": {"id": (str,), "caller": (dict,)},
    "reasoning": {"content": (list,), "encrypted_content": (str, None), "status": _STATUS},
    "compaction": {"id": (str, None)},
    "input_text": {"prompt_cache_breakpoint": (dict,)},
    "input_image": {
        "detail": ("low", "high", "auto", "original"),
        "file_id": (str, None),
        "image_url": (str, None),
        "prompt_cache_breakpoint": (dict,),
    },
    "input_file": {
        "detail": ("auto", "low", "high"),
        "file_data": (str,),
        "file_id": (str, None),
        "file_url": (str,),
        "filename": (str,),
        "prompt_cache_breakpoint": (dict,),
    },
    "output_text": {"annotations": (list,), "logprobs": (list,)},
}


def _fits(value: object, allowed: tuple[Any, ...]) -> bool:
    for option in allowed:
        if option is None or isinstance(option, str):
            if value == option and type(value) is type(option):
                return True
        elif isinstance(value, option) and isinstance(value, bool) == (option is bool):
            return True
    return False


def _keys(block: Mapping[str, Any], kind: str, where: str, *, tool: bool = False) -> list[str]:
    """Unknown keys, and optional fields of the wrong type, in a ``kind`` item or part."""
    fields = ITEM_FIELDS.get(kind) or PART_FIELDS.get(kind)
    if fields is None:
        return []
    problems = [
        f"{where}: a {kind} has no field {key!r} (the API answers 400 'Unknown parameter')"
        for key in block
        if key not in fields
    ]
    return problems + _mistyped(block, kind, where, tool=tool)


def _mistyped(block: Mapping[str, Any], kind: str, where: str, *, tool: bool) -> list[str]:
    """The optional fields of a ``kind`` item or part whose value the SDK does not allow."""
    problems = []
    for key, allowed in _OPTIONAL.get(kind, {}).items():
        if key in block and not _fits(block[key], (*allowed, None) if tool else allowed):
            shown = [a if isinstance(a, str) or a is None else a.__name__ for a in allowed]
            problems.append(
                f"{where}: {kind} {key}={short_repr(block[key])} must be one of {shown!r}"
            )
    return problems


def _nonempty(value: object) -> bool:
    return type(value) is str and bool(value)


def _image(part: Mapping[str, Any]) -> str | None:
    if not (_nonempty(part.get("image_url")) or _nonempty(part.get("file_id"))):
        return "an input_image needs an image_url or a file_id"
    return None


def _file(part: Mapping[str, Any]) -> str | None:
    if not any(_nonempty(part.get(k)) for k in ("file_data", "file_id", "file_url")):
        return "an input_file needs file_data, a file_id or a file_url"
    return None


def _none(_part: Mapping[str, Any]) -> None:
    return None


def _content(content: object, role: str, where: str) -> list[str]:
    if type(content) is str:
        return []
    if not isinstance(content, list):
        return [f"{where}: content={short_repr(content)} must be a string or a list of parts"]
    problems = []
    for index, part in enumerate(content):
        problems += _part(part, role, f"{where} content[{index}]")
    return problems


def _part(part: object, role: str, at: str) -> list[str]:
    """The problems of one content part of a message with ``role``."""
    allowed = _ASSISTANT_PARTS if role == "assistant" else _INPUT_PARTS
    kind = part.get("type") if isinstance(part, Mapping) else None
    if not isinstance(part, Mapping) or not isinstance(kind, str) or kind not in allowed:
        return [
            f"{at}: part type {short_repr(kind)} is not allowed for role {role!r}; "
            f"use one of {sorted(allowed)!r}"
        ]
    field = allowed[kind]
    if field is not None and type(part.get(field)) is not str:
        return [f"{at}: a {kind} part needs {field!r} as a string"]
    if problem := {"input_image": _image, "input_file": _file}.get(kind, _none)(part):
        return [f"{at}: {problem}"]
    return _keys(part, kind, at, tool=role == "tool")


def _reasoning(item: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    if not _nonempty(item.get("id")):
        problems.append(
            f"{where}: a reasoning item needs its 'id' (sent back as the model gave it)"
        )
    summary = item.get("summary")
    if not isinstance(summary, list) or not all(
        isinstance(s, Mapping) and s.get("type") == "summary_text" and type(s.get("text")) is str
        for s in summary
    ):
        problems.append(f"{where}: reasoning summary must be a list of summary_text parts")
    encrypted = item.get("encrypted_content")
    if encrypted is not None and type(encrypted) is not str:
        problems.append(f"{where}: encrypted_content={short_repr(encrypted)} must be a string")
    return problems


def _item_kind(item: object) -> str | None:
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def _shape(item: object, kind: str | None, where: str) -> list[str]:
    """The problems of one item on its own."""
    if kind is None or not isinstance(item, Mapping):
        return [
            f"{where}: {short_repr(item)} must be an object with a 'type' (or a message 'role')"
        ]
    if kind in ITEM_FIELDS and item.get("type", kind) != kind:
        return [f"{where}: type={short_repr(item['type'])} must be {kind!r}"]
    assistant = kind == "message" and item.get("role") == "assistant"
    keys = _keys(item, "output_message" if assistant else kind, where)
    if kind == "message":
        role = item.get("role")
        if role not in _ROLES:
            return [f"{where}: message role={short_repr(role)} must be one of {_ROLES!r}"]
        return keys + _content(item.get("content"), role, where)
    return keys + _shape_of(item, kind, where)


def _shape_of(item: Mapping[str, Any], kind: str, where: str) -> list[str]:
    """The problems of one item that is not a message, beside its keys."""
    if kind in CALLS:
        return _call_shape(item, kind, where)
    if kind in OUTPUTS:
        return _output_shape(item, kind, where)
    if kind in _ITEM_CHECKS:
        return _ITEM_CHECKS[kind](item, where)
    if kind in _MODEL_ITEMS or kind in _OTHER_ITEMS:
        return []
    return [f"{where}: item type {kind!r} is not one the Responses API documents"]


def _call_shape(item: Mapping[str, Any], kind: str, where: str) -> list[str]:
    """A call's ``call_id`` and ``name`` (non-empty) and its payload (a string)."""
    payload = "arguments" if kind == "function_call" else "input"
    return [
        f"{where}: a {kind} needs {field!r} as a {_WANTS[field == payload]}"
        for field in ("call_id", "name", payload)
        if not (type(item.get(field)) is str and (field == payload or item.get(field)))
    ]


def _output_shape(item: Mapping[str, Any], kind: str, where: str) -> list[str]:
    """A call output's ``call_id`` and its output (a string or a list of parts)."""
    problems = []
    if not _nonempty(item.get("call_id")):
        problems.append(f"{where}: a {kind} needs 'call_id' as a non-empty string")
    output = item.get("output")
    if type(output) is not str:
        # a function_call_output's parts (ResponseInputImageContentParam...) make their
        # optional fields nullable; a custom output's (ResponseInputImageParam...) do not
        role = "tool" if kind == "function_call_output" else "user"
        problems += _content(output, role, f"{where} output")
    return problems


def _compaction(item: Mapping[str, Any], where: str) -> list[str]:
    if not _nonempty(item.get("encrypted_content")):
        return [f"{where}: a compaction item needs its 'encrypted_content', verbatim"]
    return []


#: The checks of the other item types with required fields.
_ITEM_CHECKS: Final[dict[str, Callable[[Mapping[str, Any], str], list[str]]]] = {
    "reasoning": _reasoning,
    "compaction": _compaction,
}


def _is_step(kind: str | None, item: object) -> bool:
    """Whether an item is part of a model step (a step ends at input of any other kind)."""
    if kind == "message":
        return isinstance(item, Mapping) and item.get("role") == "assistant"
    return kind in CALLS or kind in _MODEL_ITEMS


def validate_responses(items: Iterable[Mapping[str, Any]] | Iterable[Component]) -> list[str]:
    """Return the ways a list of Responses API input items breaks the API's rules (empty: valid).

    Components are judged as :func:`~mellea_ctx.to_responses` writes them. The rules:

    * every item is an object with a documented ``type`` (a message may
      leave it out), with its required fields: a message has a role of
      ``user``, ``assistant``, ``system`` or ``developer`` and content that is
      a string or a list of parts (``input_text`` / ``input_image`` /
      ``input_file`` for user, system and developer; ``output_text`` /
      ``refusal`` for the assistant); a ``function_call`` has ``call_id``,
      ``name`` and ``arguments``; a ``reasoning`` item its ``id`` and
      ``summary``; a ``compaction`` item its ``encrypted_content``;
    * an item or part holds only the keys the SDK's TypedDict for it defines
      (an input message no ``id``), and its optional fields have their types
      and literal values;
    * every ``function_call_output`` answers an earlier ``function_call`` by
      ``call_id`` (a ``custom_tool_call_output`` a ``custom_tool_call``), once;
      call ids are unique;
    * a call may wait for its output only at the end: no user, system or
      developer message (or other input item) comes after it;
    * a reasoning item stays with what it preceded: the next item is part of
      the same model step (reasoning, an assistant message, a call).

    Args:
        items: The items (dicts), or components to write with :func:`to_responses`.

    Returns:
        One line per problem, ``"item N: ..."``, in item order.

    Examples:
        >>> validate_responses([
        ...     {"role": "user", "content": "hi"},
        ...     {"type": "function_call_output", "call_id": "c9", "output": "stale"},
        ... ])
        ["item 1: function_call_output call_id='c9' answers no earlier function_call"]
    """
    listed: list[Any] = list(items)
    if any(isinstance(item, Component) for item in listed):
        from ..problems import problems  # the one entry point for components

        return [str(problem) for problem in problems(listed, "responses")]
    return [line for _, line in item_problems(listed)]


def item_problems(items: Iterable[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """Return ``(item index, "item N: ...")`` per problem, in item order.

    The rules :func:`validate_responses` documents, on item dicts; each
    problem is tagged with its item as it is found, so no line is parsed back.
    """
    listed: list[Any] = list(items)
    kinds = [_item_kind(item) for item in listed]
    problems: list[str] = []
    owners: list[int] = []  # the item each line of ``problems`` is about
    pairs = _Pairs()
    for index, (item, kind) in enumerate(zip(listed, kinds, strict=True)):
        owners += [index - 1] * (len(problems) - len(owners))  # the previous item's lines
        where = f"item {index}"
        problems += _shape(item, kind, where)
        if not isinstance(item, Mapping):
            continue
        problems += pairs.see(index, item, kind, where)
        if kind == "reasoning":
            problems += _reasoning_kept(listed, kinds, index, where)
    owners += [len(listed) - 1] * (len(problems) - len(owners))
    for index, line in pairs.waiting(_last_input(listed, kinds)):
        problems.append(line)
        owners.append(index)
    order = sorted(range(len(problems)), key=owners.__getitem__)  # stable: found order kept
    return [(owners[at], problems[at]) for at in order]


class _Pairs:
    """The calls seen so far, by ``call_id``, and which of them an output answered."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[int, str]] = {}  # call_id -> (item index, kind)
        self.answered: set[str] = set()

    def see(self, index: int, item: Mapping[str, Any], kind: str | None, where: str) -> list[str]:
        """Note item ``index``, a call or an output; the problems of its ``call_id``."""
        call_id = item.get("call_id")
        if type(call_id) is not str or kind is None:
            return []
        if kind in CALLS:
            return self.call(index, call_id, kind, where)
        if kind in OUTPUTS:
            return self.output(call_id, kind, where)
        return []

    def call(self, index: int, call_id: str, kind: str, where: str) -> list[str]:
        """A call's id must be unique."""
        problems = []
        if call_id in self.calls:
            used = self.calls[call_id][0]
            problems.append(f"{where}: call_id={call_id!r} was already used by item {used}")
        self.calls.setdefault(call_id, (index, kind))
        return problems

    def output(self, call_id: str, kind: str, where: str) -> list[str]:
        """An output answers an earlier call of its kind, once."""
        call = self.calls.get(call_id)
        problems = []
        if call is None or call[1] != OUTPUTS[kind]:
            problems.append(
                f"{where}: {kind} call_id={call_id!r} answers no earlier {OUTPUTS[kind]}"
            )
        elif call_id in self.answered:
            problems.append(f"{where}: {kind} call_id={call_id!r} answers a call already answered")
        self.answered.add(call_id)
        return problems

    def waiting(self, last_input: int) -> list[tuple[int, str]]:
        """The unanswered calls before the last input item: only the last step's may wait."""
        return [
            (
                index,
                f"item {index}: {kind} call_id={call_id!r} has no {CALLS[kind]}; only a call "
                "in the last model step may wait for its output",
            )
            for call_id, (index, kind) in self.calls.items()
            if call_id not in self.answered and index < last_input
        ]


def _reasoning_kept(
    listed: Sequence[Any], kinds: Sequence[str | None], index: int, where: str
) -> list[str]:
    """A reasoning item must be followed by the output it preceded."""
    following = kinds[index + 1] if index + 1 < len(kinds) else None
    follower = listed[index + 1] if index + 1 < len(listed) else None
    if _is_step(following, follower):
        return []
    return [
        f"{where}: reasoning item {short_repr(listed[index].get('id'))} is not followed by the "
        "output it preceded (an assistant message or a call); keep them together"
    ]


def _last_input(listed: Sequence[Any], kinds: Sequence[str | None]) -> int:
    """The index of the last item that is neither part of a model step nor an output."""
    return max(
        (
            i
            for i, (k, item) in enumerate(zip(kinds, listed, strict=True))
            if not _is_step(k, item) and k not in OUTPUTS
        ),
        default=-1,
    )
