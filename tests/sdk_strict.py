"""The official SDKs' request types, read strictly: oracles for what we write.

``responses_input_problems(items)`` reads a Responses ``input`` list against
openai's own TypedDicts (``openai.types.responses.ResponseInputParam``),
walking their annotations: an unknown key, a value of the wrong type, a
literal outside its values or a missing ``Required`` key is a problem. The
TypedDicts are ``total=False`` dicts that the SDK itself never checks, and
pydantic's ``TypeAdapter`` reads an ``Iterable`` lazily (its items unchecked),
so this reader is written over the annotations instead.

Three ``Required`` keys are relaxed, each one the API reference documents as
optional in an input: an assistant message's ``id`` and ``status`` and its
``output_text``'s ``annotations`` (the conversation-state guide sends
``{"role": "assistant", "content": ...}`` back without them), and an
``input_image``'s ``detail`` ("Defaults to `auto`").

``gemini_problems(body)`` validates each content (and ``systemInstruction``)
with google-genai's pydantic ``types.Content`` from the JSON text, as the
wire carries it: its models forbid extra keys (``extra="forbid"``), and bytes
fields (``thoughtSignature``, ``inlineData.data``) must be base64.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Union

import pydantic
import typing_extensions

__all__ = ["gemini_problems", "responses_input_problems"]

#: ``(TypedDict name, key)``: ``Required`` in the SDK, optional in the API reference.
RELAXED = frozenset(
    {
        ("ResponseOutputMessageParam", "id"),
        ("ResponseOutputMessageParam", "status"),
        ("ResponseOutputTextParam", "annotations"),
        ("ResponseInputImageParam", "detail"),
    }
)
_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    *(getattr(typing, name) for name in ("Required", "NotRequired") if hasattr(typing, name)),
}
_SEQUENCES = {list, Sequence, Iterable, typing.List}  # noqa: UP006 (the SDK spells it so)


def _unwrap(annotation: Any) -> Any:
    while typing_extensions.get_origin(annotation) in (*_WRAPPERS, typing_extensions.Annotated):
        annotation = typing_extensions.get_args(annotation)[0]
    return annotation


def _check(value: Any, annotation: Any, path: str) -> list[str]:
    annotation = _unwrap(annotation)
    origin = typing_extensions.get_origin(annotation)
    args = typing_extensions.get_args(annotation)
    if annotation is Any or annotation is object:
        return []
    if annotation is None or annotation is type(None):
        return [] if value is None else [f"{path}: {value!r} must be null"]
    if origin is Union or str(origin) == "<class 'types.UnionType'>":
        branches = [_check(value, option, path) for option in args]
        if any(not found for found in branches):
            return []
        return min(branches, key=len)
    if origin is Literal:
        return (
            []
            if value in args and type(value) is not bool
            else [f"{path}: {value!r} not in {args}"]
        )
    if typing_extensions.is_typeddict(annotation):
        return _typed_dict(value, annotation, path)
    if origin in _SEQUENCES or annotation.__name__ == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: {value!r} must be a list"]
        inner = args[0] if args else Any
        return [
            line for at, item in enumerate(value) for line in _check(item, inner, f"{path}[{at}]")
        ]
    if origin in (dict, Mapping, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            return [f"{path}: {value!r} must be an object"]
        inner = args[1] if len(args) == 2 else Any
        return [
            line for key, item in value.items() for line in _check(item, inner, f"{path}.{key}")
        ]
    if annotation is bool:
        return [] if type(value) is bool else [f"{path}: {value!r} must be a boolean"]
    if annotation in (int, float):
        ok = isinstance(value, (int, float)) and type(value) is not bool
        ok = ok and (annotation is float or isinstance(value, int))
        return [] if ok else [f"{path}: {value!r} must be a {annotation.__name__}"]
    if annotation is str:
        return [] if type(value) is str else [f"{path}: {value!r} must be a string"]
    raise AssertionError(f"{path}: the strict reader does not know {annotation!r}")


def _typed_dict(value: Any, kind: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: {value!r} must be an object ({kind.__name__})"]
    hints = typing_extensions.get_type_hints(kind, include_extras=True)
    problems = [
        f"{path}: unknown key {key!r} for {kind.__name__}" for key in value if key not in hints
    ]
    for key in kind.__required_keys__:
        if key not in value and (kind.__name__, key) not in RELAXED:
            problems.append(f"{path}: {kind.__name__} needs {key!r}")
    for key, item in value.items():
        if key in hints:
            problems += _check(item, hints[key], f"{path}.{key}")
    return problems


def responses_input_problems(items: list[Any]) -> list[str]:
    """The ways ``items`` break openai's ``ResponseInputParam``, read strictly (empty: none)."""
    from openai.types.responses import ResponseInputParam

    return _check(items, ResponseInputParam, "input")


def gemini_problems(body: Mapping[str, Any]) -> list[str]:
    """The ways a Gemini body breaks google-genai's ``types.Content`` (empty: none)."""
    from google.genai import types

    problems = []
    contents = [(f"contents[{i}]", c) for i, c in enumerate(body.get("contents", []))]
    if "systemInstruction" in body:
        contents.append(("systemInstruction", body["systemInstruction"]))
    for where, content in contents:
        try:
            types.Content.model_validate_json(json.dumps(content, allow_nan=False))
        except (ValueError, pydantic.ValidationError) as exc:
            problems.append(f"{where}: {exc}")
    extra = set(body) - {"contents", "systemInstruction"}
    if extra:
        problems.append(f"body: keys {sorted(extra)} are not ours to write")
    return problems
