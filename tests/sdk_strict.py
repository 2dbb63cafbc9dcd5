"""A strict reader over the official SDKs' own request types: oracles for what we write.

The ``anthropic`` and ``openai`` SDKs describe every request body as
``TypedDict`` classes (``MessageParam``, ``ChatCompletionMessageParam``,
``ResponseInputParam``...). Python does not check them, and pydantic ignores
unknown keys of a TypedDict it did not declare (and reads an ``Iterable``
lazily, its items unchecked); the APIs refuse them ("Extra inputs are not
permitted"). :func:`problems` reads a JSON value against such an annotation
strictly: every key must be one the TypedDict declares, every required key
present, every ``Literal`` one of its values, each union satisfied by at least
one member. Nothing here is written from our code: the annotations are the SDK's.

Four ``Required`` keys are relaxed (:data:`RELAXED`), each one the Responses
API reference documents as optional in an input: an assistant message's
``id`` and ``status`` and its ``output_text``'s ``annotations`` (the
conversation-state guide sends ``{"role": "assistant", "content": ...}`` back
without them), and an ``input_image``'s ``detail`` ("Defaults to `auto`").

:func:`gemini_problems` validates each content (and ``systemInstruction``)
with google-genai's pydantic ``types.Content`` from the JSON text, as the wire
carries it: its models forbid extra keys (``extra="forbid"``), and bytes
fields (``thoughtSignature``, ``inlineData.data``) must be base64.
"""

from __future__ import annotations

import collections.abc
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union

import pydantic
import typing_extensions

__all__ = ["RELAXED", "gemini_problems", "problems", "responses_input_problems"]

#: ``(TypedDict name, key)``: ``Required`` in the SDK, optional in the API reference.
RELAXED = frozenset(
    {
        ("ResponseOutputMessageParam", "id"),
        ("ResponseOutputMessageParam", "status"),
        ("ResponseOutputTextParam", "annotations"),
        ("ResponseInputImageParam", "detail"),
    }
)

_SCALARS: dict[type, tuple[type, ...]] = {
    str: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
}


def _hints(cls: type) -> dict[str, Any]:
    return typing_extensions.get_type_hints(cls, include_extras=True)


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def _strip(tp: Any) -> Any:
    """Without ``Annotated``, ``Required`` and ``NotRequired`` wrappers."""
    while True:
        origin = typing.get_origin(tp)
        if origin in (typing.Annotated, typing_extensions.Annotated) or origin in (
            typing.Required,
            typing.NotRequired,
            typing_extensions.Required,
            typing_extensions.NotRequired,
        ):
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _tagged(value: Any, member: Any) -> bool:
    """Whether ``member`` is the TypedDict that ``value``'s ``type`` (or ``role``) names."""
    member = _strip(member)
    if not (isinstance(value, dict) and _is_typeddict(member)):
        return False
    hints = _hints(member)
    for tag in ("type", "role"):
        if tag in value and tag in hints:
            literal = _strip(hints[tag])
            return typing.get_origin(literal) in (Literal, typing_extensions.Literal) and value[
                tag
            ] in typing.get_args(literal)
    return False


def problems(value: Any, tp: Any, where: str = "$") -> list[str]:
    """Return why ``value`` is not a ``tp`` (an SDK annotation), read strictly; ``[]``: it is."""
    tp = _strip(tp)
    if tp is Any or tp is object:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{where}: {value!r:.60} is not null"]
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        members = typing.get_args(tp)
        found: list[str] = []
        tagged: list[str] | None = None
        for member in members:
            member_problems = problems(value, member, where)
            if not member_problems:
                return []  # any member that reads it will do
            if tagged is None and _tagged(value, member):  # the member its "type" names
                tagged = member_problems
            found.append(min(member_problems, key=len))
        if tagged is not None:
            return tagged
        return [f"{where}: matches no member of the union: {found[:3]}"]
    if origin in (Literal, typing_extensions.Literal):
        return [] if value in typing.get_args(tp) else [f"{where}: {value!r:.60} not in {tp}"]
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: {value!r:.60} is not an object ({tp.__name__})"]
        hints = _hints(tp)
        out = [
            f"{where}: unknown key {key!r} for {tp.__name__}" for key in value if key not in hints
        ]
        out += [
            f"{where}: missing key {key!r} of {tp.__name__}"
            for key in tp.__required_keys__  # type: ignore[attr-defined]
            if key not in value and (tp.__name__, key) not in RELAXED
        ]
        for key, inner in value.items():
            if key in hints:
                out += problems(inner, hints[key], f"{where}.{key}")
        return out
    sequence = (list, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable)
    if origin in sequence or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{where}: {value!r:.60} is not an array"]
        (item,) = typing.get_args(tp) or (Any,)
        return [
            p
            for index, inner in enumerate(value)
            for p in problems(inner, item, f"{where}[{index}]")
        ]
    if origin in (dict, collections.abc.Mapping):
        return [] if isinstance(value, dict) else [f"{where}: {value!r:.60} is not an object"]
    if tp in _SCALARS:
        ok = isinstance(value, _SCALARS[tp]) and not (tp is not bool and isinstance(value, bool))
        return [] if ok else [f"{where}: {value!r:.60} is not a {tp.__name__}"]
    if isinstance(tp, type) and isinstance(value, tp):
        return []
    return [f"{where}: cannot read {value!r:.60} as {tp}"]


def responses_input_problems(items: list[Any]) -> list[str]:
    """The ways ``items`` break openai's ``ResponseInputParam``, read strictly (empty: none)."""
    from openai.types.responses import ResponseInputParam

    return problems(items, ResponseInputParam, "input")


def gemini_problems(body: Mapping[str, Any]) -> list[str]:
    """The ways a Gemini body breaks google-genai's ``types.Content`` (empty: none)."""
    from google.genai import types

    found = []
    contents = [(f"contents[{i}]", c) for i, c in enumerate(body.get("contents", []))]
    if "systemInstruction" in body:
        contents.append(("systemInstruction", body["systemInstruction"]))
    for where, content in contents:
        try:
            types.Content.model_validate_json(json.dumps(content, allow_nan=False))
        except (ValueError, pydantic.ValidationError) as exc:
            found.append(f"{where}: {exc}")
    extra = set(body) - {"contents", "systemInstruction"}
    if extra:
        found.append(f"body: keys {sorted(extra)} are not ours to write")
    return found
