"""Gemini's documented rules for ``contents``: :func:`validate_gemini`.

Written from the Gemini API reference (``Content``, ``Part``, function
calling), not from our reader, so it judges any request, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._core.components import Component
from .._core.reprs import short_repr

__all__ = ["contents_problems", "validate_gemini"]

#: The fields of a part that hold its data; a part holds exactly one.
_DATA: Final = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)


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
    if key == "inlineData" and not (
        isinstance(value, Mapping)
        and type(value.get("mimeType")) is str
        and type(value.get("data")) is str
    ):
        return [f"{where}: inlineData needs 'mimeType' and 'data' (base64) as strings"]
    if key == "fileData" and not (isinstance(value, Mapping) and type(value.get("fileUri")) is str):
        return [f"{where}: fileData needs 'fileUri' as a string"]
    if key in ("functionCall", "functionResponse"):
        wanted = "model" if key == "functionCall" else "user"
        if role != wanted:
            return [f"{where}: a {key} belongs in a {wanted!r} content, not {role!r}"]
        if (
            not isinstance(value, Mapping)
            or type(value.get("name")) is not str
            or not value["name"]
        ):
            return [f"{where}: {key} needs a non-empty 'name'"]
        field = "args" if key == "functionCall" else "response"
        if (field in value or field == "response") and not isinstance(value.get(field), Mapping):
            return [f"{where}: {key} {field}={short_repr(value.get(field))} must be an object"]
    if "thoughtSignature" in part and type(part["thoughtSignature"]) is not str:
        return [f"{where}: thoughtSignature must be the string the model sent, verbatim"]
    return []


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
    * a ``functionCall`` (``name``, object ``args``) is in a ``model``
      content that comes right after a ``user`` content; a ``functionResponse``
      (``name``, object ``response``) is in a ``user`` content;
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
    if isinstance(contents, Mapping):
        listed: list[Any] = list(contents.get("contents") or [])
    else:
        listed = list(contents)
        if any(isinstance(item, Component) for item in listed):
            from .problems import problems  # the one entry point for components

            return [str(problem) for problem in problems(listed, "gemini")]
    return [line for _, line in contents_problems(listed)]


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
        role = content.get("role", "user")
        if role not in ("user", "model"):
            problems.append(f"{where}: role={short_repr(role)} must be 'user' or 'model'")
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            problems.append(f"{where}: parts={short_repr(parts)} must be a non-empty list")
            parts = []
        for at, part in enumerate(parts):
            problems += _part(part, str(role), f"{where} parts[{at}]")
        calls = _calls(content, "functionCall")
        if calls and previous is not None and previous.get("role", "user") != "user":
            problems.append(f"{where}: a function call turn must come right after a user turn")
        before = _calls(previous, "functionCall") if previous is not None else []
        answers = _calls(content, "functionResponse")
        if before or answers:
            reason = _answers(before, answers)
            if reason is not None:
                problems.append(f"{where}: {reason}")
        previous = content
    owners += [len(listed) - 1] * (len(problems) - len(owners))
    return list(zip(owners, problems, strict=True))
