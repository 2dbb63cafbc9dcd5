"""Gemini's documented rules for ``contents``: :func:`validate_gemini`.

Written from the Gemini API reference (``Content``, ``Part``, function
calling) and the fields of google-genai's ``types.Content`` and ``types.Part``
(the API refuses a field it does not define: ``Invalid JSON payload received.
Unknown name "cache_control" at 'contents[0].parts[0]': Cannot find field.``),
not from our reader, so it judges any request, whoever wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..._core.components import Component
from ..._core.reprs import short_repr
from . import CONTENT_FIELDS, DATA_FIELDS, INNER_FIELDS, PART_FIELDS

_DATA: Final = DATA_FIELDS
#: Fields whose value has one JSON type, by the object that holds them (google-genai's types).
_TYPES: Final[dict[str, dict[str, tuple[type, ...]]]] = {
    "part": {"text": (str,), "thought": (bool,), "thoughtSignature": (str,)},
    "functionCall": {"id": (str,), "name": (str,), "args": (dict,), "willContinue": (bool,)},
    "functionResponse": {
        "id": (str,),
        "name": (str,),
        "response": (dict,),
        "parts": (list,),
        "scheduling": (str,),
        "willContinue": (bool,),
    },
    "inlineData": {"mimeType": (str,), "data": (str,), "displayName": (str,)},
    "fileData": {"mimeType": (str,), "fileUri": (str,), "displayName": (str,)},
    "executableCode": {"id": (str,), "code": (str,), "language": (str,)},
    "codeExecutionResult": {"id": (str,), "outcome": (str,), "output": (str,)},
}
_OBJECTS: Final = frozenset(PART_FIELDS - {"text", "thought", "thoughtSignature"})
_NAMES: Final = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}


def _finite(value: object) -> bool:
    """Whether ``value`` is JSON: no ``NaN`` or ``Infinity`` anywhere inside it."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _fields(value: Mapping[str, Any], owner: str, allowed: Iterable[str], where: str) -> list[str]:
    """Unknown keys and wrong types in ``value``, an object of kind ``owner``."""
    problems = [
        f"{where}: {owner} has no field {key!r} (Gemini refuses unknown fields)"
        for key in value
        if key not in allowed
    ]
    types = _TYPES.get(owner, {})
    for key, item in value.items():
        wanted = types.get(key) or ((dict,) if owner == "part" and key in _OBJECTS else None)
        if wanted is None:
            continue
        if not isinstance(item, wanted) or isinstance(item, bool) != (wanted == (bool,)):
            problems.append(
                f"{where}: {owner} {key}={short_repr(item)} must be {_NAMES[wanted[0]]}"
            )
    return problems


def _part(part: object, role: str, where: str) -> list[str]:
    if not isinstance(part, Mapping):
        return [f"{where}: {short_repr(part)} must be an object"]
    held = [key for key in _DATA if key in part]
    if len(held) != 1:
        return [f"{where}: a part holds exactly one of {_DATA!r}; this one holds {held!r}"]
    key = held[0]
    value = part[key]
    if key == "text" and type(value) is not str:
        return [f"{where}: text={short_repr(value)} must be a string"]
    shape = _part_fields(part, key, where)
    if shape:
        return shape
    check = _DATA_CHECKS.get(key)
    return check(value, key, role, where) if check is not None else []


def _part_fields(part: Mapping[str, Any], key: str, where: str) -> list[str]:
    """The unknown or mistyped fields of a part and of the object its data ``key`` holds."""
    shape = _fields(part, "part", PART_FIELDS, where)
    value = part[key]
    if isinstance(value, Mapping) and key in INNER_FIELDS:
        shape += _fields(value, key, INNER_FIELDS[key], where)
    return shape


def _inline_data(value: object, key: str, role: str, where: str) -> list[str]:
    if not (
        isinstance(value, Mapping)
        and type(value.get("mimeType")) is str
        and type(value.get("data")) is str
    ):
        return [f"{where}: inlineData needs 'mimeType' and 'data' (base64) as strings"]
    return []


def _file_data(value: object, key: str, role: str, where: str) -> list[str]:
    if not (isinstance(value, Mapping) and type(value.get("fileUri")) is str):
        return [f"{where}: fileData needs 'fileUri' as a string"]
    return []


def _call_or_response(value: object, key: str, role: str, where: str) -> list[str]:
    """A call in a model content, a response in a user one; named, with an object payload."""
    wanted = "model" if key == "functionCall" else "user"
    if role != wanted:
        return [f"{where}: a {key} belongs in a {wanted!r} content, not {role!r}"]
    if not (isinstance(value, Mapping) and type(value.get("name")) is str and value["name"]):
        return [f"{where}: {key} needs a non-empty 'name'"]
    return _payload(value, key, where)


def _payload(value: Mapping[str, Any], key: str, where: str) -> list[str]:
    """A call's ``args`` (when given) or a response's ``response``: a finite JSON object."""
    field = "args" if key == "functionCall" else "response"
    if (field in value or field == "response") and not isinstance(value.get(field), Mapping):
        return [f"{where}: {key} {field}={short_repr(value.get(field))} must be an object"]
    if not _finite(value.get(field)):
        return [f"{where}: {key} {field} holds NaN or Infinity, which JSON (and Gemini) refuse"]
    return []


#: The checks of a part's data, by its key, once its fields are known good.
_DATA_CHECKS: Final[dict[str, Callable[[object, str, str, str], list[str]]]] = {
    "inlineData": _inline_data,
    "fileData": _file_data,
    "functionCall": _call_or_response,
    "functionResponse": _call_or_response,
}


def system_problems(system: object) -> list[str]:
    """The problems of a ``systemInstruction``: a content of text parts."""
    where = "systemInstruction"
    if not isinstance(system, Mapping):
        return [f"{where}: {short_repr(system)} must be an object with 'parts'"]
    problems = _fields(system, "content", CONTENT_FIELDS, where)
    parts = system.get("parts")
    if not isinstance(parts, list):
        return [*problems, f"{where}: parts={short_repr(parts)} must be a list"]
    for at, part in enumerate(parts):
        problems += _part(part, "user", f"{where} parts[{at}]")
    return problems


def _calls(content: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    return [
        p[key]
        for p in parts
        if isinstance(p, Mapping)
        and isinstance(p.get(key), Mapping)
        and type(p[key].get("name")) is str
    ]


def _answers(calls: list[Mapping[str, Any]], answers: list[Mapping[str, Any]]) -> str | None:
    """Why ``answers`` (functionResponses) do not answer ``calls`` one for one, or ``None``."""
    if len(answers) != len(calls):
        return f"{len(calls)} functionCall(s) get {len(answers)} functionResponse(s)"
    left = list(calls)
    for answer in answers:
        answer_id = answer.get("id")
        match = next(
            (
                c
                for c in left
                if (
                    c.get("id") == answer_id
                    if answer_id or c.get("id")
                    else c["name"] == answer["name"]
                )
            ),
            None,
        )
        if match is None or match["name"] != answer["name"]:
            return (
                f"functionResponse {answer['name']!r} (id={short_repr(answer_id)}) answers no call"
            )
        left.remove(match)
    return None


def validate_gemini(
    contents: Iterable[Mapping[str, Any]] | Iterable[Component] | Mapping[str, Any],
) -> list[str]:
    """Return the ways Gemini ``contents`` break the API's rules (empty: valid).

    Takes the ``contents`` list, a request body with ``contents`` (and
    ``systemInstruction``), or components as :func:`~mellea_ctx.to_gemini`
    writes them. The rules:

    * there is at least one content; each is an object with a role of
      ``user`` or ``model`` (or none) and a non-empty ``parts`` list;
    * each part holds exactly one of ``text``, ``inlineData`` (``mimeType``
      and ``data``), ``fileData`` (``fileUri``), ``functionCall``,
      ``functionResponse``, ``executableCode``, ``codeExecutionResult``; a
      ``thoughtSignature`` is a string;
    * a content, a part and a part's data hold only the fields google-genai's
      types define, each of its JSON type (``systemInstruction`` too);
    * a ``functionCall`` (``name``, object ``args``) is in a ``model``
      content that comes right after a ``user`` content (never first); a
      ``functionResponse`` (``name``, object ``response``) is in a ``user``
      content; neither holds ``NaN`` or ``Infinity``;
    * the content after a model turn with calls answers every call, by
      ``id`` when the calls have ids, else by name and order, and a content
      of responses answers the model turn right before it; the last model
      turn may wait for its responses.

    Args:
        contents: The contents, a request body, or components.

    Returns:
        One line per problem, ``"content N: ..."``, in order.

    Examples:
        >>> validate_gemini([
        ...     {"role": "user", "parts": [{"text": "Weather?"}]},
        ...     {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {}}}]},
        ...     {"role": "user", "parts": [{"text": "Never mind."}]},
        ... ])
        ['content 2: 1 functionCall(s) get 0 functionResponse(s)']
    """
    found_in_system: list[str] = []
    if isinstance(contents, Mapping):
        listed: list[Any] = list(contents.get("contents") or [])
        system = contents.get("systemInstruction")
        if system is not None:
            found_in_system = system_problems(system)
    else:
        listed = list(contents)
        if any(isinstance(item, Component) for item in listed):
            from ..problems import problems  # the one entry point for components

            return [str(problem) for problem in problems(listed, "gemini")]
    return [*found_in_system, *(line for _, line in contents_problems(listed))]


def contents_problems(contents: Iterable[Any]) -> list[tuple[int | None, str]]:
    """Return ``(content index, "content N: ...")`` per problem, in order.

    The rules :func:`validate_gemini` documents, on the ``contents`` list;
    each problem is tagged with its content as it is found, so no line is
    parsed back. The index is ``None`` for a problem of the list as a whole.
    """
    listed = list(contents)
    if not listed:
        return [(None, "contents: there must be at least one content")]
    problems: list[str] = []
    owners: list[int] = []  # the content each line of ``problems`` is about
    previous: Mapping[str, Any] | None = None
    for index, content in enumerate(listed):
        owners += [index - 1] * (len(problems) - len(owners))  # the previous content's lines
        where = f"content {index}"
        if not isinstance(content, Mapping):
            problems.append(f"{where}: {short_repr(content)} must be an object with 'parts'")
            previous = None
            continue
        problems += _content(content, where)
        problems += _after(content, previous, where)
        previous = content
    owners += [len(listed) - 1] * (len(problems) - len(owners))
    return list(zip(owners, problems, strict=True))


def _content(content: Mapping[str, Any], where: str) -> list[str]:
    """The problems of one content on its own: its role, fields and parts."""
    problems = []
    role = content.get("role", "user")
    if role not in ("user", "model"):
        problems.append(f"{where}: role={short_repr(role)} must be 'user' or 'model'")
    problems += _fields(content, "content", CONTENT_FIELDS, where)
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        problems.append(f"{where}: parts={short_repr(parts)} must be a non-empty list")
        parts = []
    for at, part in enumerate(parts):
        problems += _part(part, str(role), f"{where} parts[{at}]")
    return problems


def _after(content: Mapping[str, Any], previous: Mapping[str, Any] | None, where: str) -> list[str]:
    """The problems of a content beside the one before it (``None``: none, or not an object):
    a call turn comes right after a user turn, and responses answer the calls before."""
    problems = []
    calls = _calls(content, "functionCall")
    opens = previous is None or previous.get("role", "user") != "user"
    if calls and content.get("role", "user") == "model" and opens:
        # Gemini's 400: "Please ensure that function call turn comes immediately after a
        # user turn or after a function response turn."
        problems.append(f"{where}: a function call turn must come right after a user turn")
    before = _calls(previous, "functionCall") if previous is not None else []
    answers = _calls(content, "functionResponse")
    if before or answers:
        reason = _answers(before, answers)
        if reason is not None:
            problems.append(f"{where}: {reason}")
    return problems
