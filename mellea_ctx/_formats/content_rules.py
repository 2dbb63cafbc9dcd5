"""What each provider rejects inside messages (beside the tool-call pairing rules).

Written from the providers' documentation and their error messages:

* Anthropic answers 400 "text content blocks must contain non-whitespace
  text" (and "must be non-empty") for a text block that is empty or only
  whitespace, in any turn or in the system prompt; the model itself sometimes
  returns such a block (``"\\n\\n"`` before a thinking block), which must then
  not be sent back as it is.
* Anthropic ``tool_use`` ids must match ``^[a-zA-Z0-9_-]+$``.
* With extended thinking, while a tool loop continues (the history ends with
  tool results), the loop's assistant turn must start with a ``thinking`` or
  ``redacted_thinking`` block, sent back unchanged; the model writes thinking
  on the loop's first step, so that is the turn checked.
* Anthropic caches up to 4 breakpoints a request ("A maximum of 4 blocks
  with cache_control may be provided"), and "a 1-hour cache entry must
  appear before any 5-minute cache entries" (prompt caching, mixing TTLs).
* OpenAI: an assistant message's ``content`` is "required unless
  ``tool_calls`` or ``function_call`` is specified"; ``null`` without them is
  rejected.

Each check returns ``(index, problem, change, replacement)`` findings; the
replacement is the repaired component (``None``: drop it, ``...``: no repair
is possible, only the report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeGuard

import attrs

from .._core.components import Component, Message, ModelOutputThunk, ToolMessage
from .._core.parts import OpaquePart, Part, RedactedThinkingPart, TextPart, ThinkingPart
from .anthropic.write import TOOL_ID, anthropic_id
from .notes import NOTES, note

#: ``(index, problem, change, replacement)``; replacement ``...`` means report only.
Finding = tuple[int, str, str, Any]

_SYSTEM: Final = ("system", "developer")
#: The Messages API's limit of ``cache_control`` breakpoints in one request.
CACHE_LIMIT: Final = 4


def with_parts(component: Component, parts: Sequence[Part], **changes: Any) -> Component:
    """Return ``component`` holding ``parts`` (and ``changes``); ``self`` is not modified."""
    removed = len(component.parts) - len(parts)
    extra = component.extra
    layout = note(extra, "anthropic_blocks")
    if isinstance(layout, str) and removed:  # the dropped parts were blank text, in order
        kept = [i for i, part in enumerate(component.parts) if part in parts]
        codes, at = [], 0
        for code in layout:
            if code == "p":
                codes.append("p" if at in kept else "")
                at += 1
            else:
                codes.append("t")
        notes = dict(extra[NOTES])
        notes["anthropic_blocks"] = "".join(codes)
        extra = extra.set(NOTES, notes)
    if isinstance(component, ModelOutputThunk):
        return ModelOutputThunk(
            None,
            parts=parts,
            tool_calls=changes.get("tool_calls", component.tool_calls),
            usage=component.usage,
            extra=extra,
            structured=component.structured,
        )
    if isinstance(component, (Message, ToolMessage)):
        return attrs.evolve(component, content=tuple(parts), extra=extra, **changes)
    return Message(component.role, parts, tool_calls=component.tool_calls, **changes)


def _blank(part: Part) -> TypeGuard[TextPart]:
    return type(part) is TextPart and not part.text.strip()


def _sent_blanks(component: Component) -> list[TextPart]:
    """The blank text blocks a component would send Anthropic."""
    if component.tool_call_id is not None and not component.structured:
        return []  # a string result is not a text block ("" is accepted)
    blank = [part for part in component.parts if _blank(part)]
    if not component.structured:  # a plain "" is not sent at all; "  " is sent as text
        blank = [part for part in blank if part.text]
    return blank


def _blank_text(index: int, component: Component, system: bool) -> Finding | None:
    if system and all(_blank(p) for p in component.parts):
        problem = (
            f"the system prompt is empty or only whitespace ({component.content[:20]!r}); "
            "Anthropic refuses blank text: leave the system prompt out instead"
        )
        return index, problem, "dropped the blank system prompt", None
    blank = _sent_blanks(component)
    if not blank:
        return None
    return _without_blanks(index, component, blank, system)


def _without_blanks(
    index: int, component: Component, blank: Sequence[TextPart], system: bool
) -> Finding:
    """The finding for ``blank``: the component without them, or dropped when nothing is left."""
    where = "the system prompt" if system else "the message"
    noun = "block" if len(blank) == 1 else "blocks"
    problem = (
        f"{where} holds {len(blank)} text {noun} empty or only whitespace "
        f"({', '.join(repr(p.text) for p in blank[:3])}); Anthropic answers 400 "
        "'text content blocks must contain non-whitespace text'"
    )
    kept = [part for part in component.parts if not _blank(part)]
    if not kept and not component.tool_calls and component.tool_call_id is None:
        return index, problem, f"dropped the message: its only text {noun} were blank", None
    change = f"removed {len(blank)} blank text {noun}"
    return index, problem, change, with_parts(component, kept)


def _bad_ids(component: Component) -> list[str]:
    """The component's call ids, and the id its result answers, that Anthropic refuses."""
    bad = [call.id for call in component.tool_calls if not TOOL_ID.match(call.id)]
    result = component.tool_call_id
    if result is not None and not TOOL_ID.match(result):
        bad.append(result)
    return bad


def _with_anthropic_ids(component: Component) -> Component:
    """``component`` with its call ids, or the id its result answers, made Anthropic ids."""
    if component.tool_calls:
        calls = [attrs.evolve(c, id=anthropic_id(c.id)) for c in component.tool_calls]
        return with_parts(component, component.parts, tool_calls=calls)
    assert isinstance(component, ToolMessage)
    return attrs.evolve(component, tool_call_id=anthropic_id(component.tool_call_id or ""))


def _ids(index: int, component: Component) -> Finding | None:
    bad = _bad_ids(component)
    if not bad:
        return None
    problem = (
        f"tool id(s) {', '.join(map(repr, bad))} do not match ^[a-zA-Z0-9_-]+$, "
        "which Anthropic requires"
    )
    mapped = ", ".join(f"{old!r} -> {anthropic_id(old)!r}" for old in bad)
    fixed = _with_anthropic_ids(component)
    return index, problem, f"renamed {mapped} (call and result alike)", fixed


def _starts_with_thinking(component: Component) -> bool:
    for part in component.parts:
        if _blank(part):
            continue  # a blank text block is dropped before sending
        return isinstance(part, (ThinkingPart, RedactedThinkingPart))
    return False


def _thinks(items: Sequence[Component]) -> bool:
    """Whether the history holds thinking, so extended thinking is in use."""
    return any(isinstance(p, (ThinkingPart, RedactedThinkingPart)) for c in items for p in c.parts)


def _loop_opener(items: Sequence[Component]) -> int | None:
    """The index of the first assistant turn since the last plain user turn (none: ``None``)."""
    first: int | None = None
    for index in range(len(items) - 1, -1, -1):
        component = items[index]
        if component.role == "assistant":
            first = index
        elif component.tool_call_id is None and component.role not in _SYSTEM:
            break  # a plain user turn: the loop began after it
    return first


def _loop_thinking(items: Sequence[Component]) -> Finding | None:
    """With thinking in use, the continuing loop's first assistant turn starts with thinking."""
    if not _thinks(items) or items[-1].tool_call_id is None:
        return None  # no thinking, or no loop continues
    first = _loop_opener(items)
    if first is None or _starts_with_thinking(items[first]):
        return None
    problem = (
        "the tool loop continues (the history ends with tool results) but its first "
        "assistant turn does not start with a thinking block; with extended thinking "
        "Anthropic answers 400 (keep that turn's thinking blocks, unchanged)"
    )
    return first, problem, "", ...


def _cache_holders(component: Component) -> list[Mapping[str, Any]]:
    """What in ``component`` may carry a ``cache_control`` mark, in request order."""
    holders: list[Mapping[str, Any]] = [
        part.extra for part in component.parts if not isinstance(part, OpaquePart)
    ]
    holders += [part.block for part in component.parts if isinstance(part, OpaquePart)]
    holders += [call.extra for call in component.tool_calls]
    if component.tool_call_id is not None:
        holders.append(component.extra)
    return holders


def _cache_marks(items: Sequence[Component]) -> list[tuple[int, str]]:
    """``(index, ttl)`` of every ``cache_control`` mark the history carries, in request order."""
    marks: list[tuple[int, str]] = []
    for index, component in enumerate(items):
        for holder in _cache_holders(component):
            mark = holder.get("cache_control")
            if mark is not None:
                ttl = mark.get("ttl") if isinstance(mark, Mapping) else None
                marks.append((index, "1h" if ttl == "1h" else "5m"))
    return marks


def _cache_rules(items: Sequence[Component]) -> list[Finding]:
    """At most 4 ``cache_control`` marks; 1-hour marks before 5-minute ones (prompt caching)."""
    marks = _cache_marks(items)
    found: list[Finding] = []
    if len(marks) > CACHE_LIMIT:
        problem = (
            f"the history carries {len(marks)} cache_control marks; Anthropic answers 400 "
            f"'A maximum of {CACHE_LIMIT} blocks with cache_control may be provided'"
        )
        found.append((marks[CACHE_LIMIT][0], problem, "", ...))
    ttls = [ttl for _, ttl in marks]
    after = (
        [index for index, ttl in marks[ttls.index("5m") :] if ttl == "1h"] if "5m" in ttls else []
    )
    if after:
        problem = (
            "a ttl '1h' cache_control mark comes after a 5-minute one; a 1-hour cache entry "
            "must appear before any 5-minute cache entries (Anthropic prompt caching)"
        )
        found.append((after[0], problem, "", ...))
    return found


def _leading(items: Sequence[Component]) -> int:
    count = 0
    while count < len(items) and items[count].role in _SYSTEM:
        count += 1
    return count


def _anthropic_checks(index: int, component: Component, system: bool) -> list[Finding]:
    """The findings for one component, each repair applied to the one before's result."""
    findings: list[Finding] = []
    blank = _blank_text(index, component, system)
    if blank is not None:
        findings.append(blank)
        if blank[3] is None:
            return findings
        component = blank[3]
    ids = _ids(index, component)
    if ids is not None:
        findings.append(ids)
    return findings


def _openai_check(index: int, component: Component) -> Finding | None:
    if component.role != "assistant" or component.tool_calls or component.structured:
        return None
    if "function_call" in component.extra:
        return None
    if any(type(part) is TextPart for part in component.parts):
        return None
    problem = (
        "an assistant message with content null and no tool calls; OpenAI requires "
        "content unless tool_calls is given"
    )
    extra = {k: v for k, v in component.extra.items() if k != NOTES}
    parts = [*component.parts, TextPart("")]
    fixed = Message("assistant", parts, extra=extra, name=component.name, structured=False)
    return index, problem, "set its content to ''", fixed


def openai_findings(items: Sequence[Component]) -> list[Finding]:
    """What OpenAI rejects inside the messages: an assistant's ``null`` content without calls."""
    findings: list[Finding] = []
    for index, component in enumerate(items):
        found = _openai_check(index, component)
        if found is not None:
            findings.append(found)
    return findings


def anthropic_findings(items: Sequence[Component]) -> list[Finding]:
    """What the Messages API rejects inside the turns (the module docstring lists it)."""
    findings: list[Finding] = []
    leading = _leading(items)
    for index, component in enumerate(items):
        findings += _anthropic_checks(index, component, index < leading)
    loop = _loop_thinking(items)
    if loop is not None:
        findings.append(loop)
    return findings + _cache_rules(items)


#: A provider's checks: ``items -> findings`` (:func:`openai_findings`, :func:`anthropic_findings`).
Findings = Callable[[Sequence[Component]], list[Finding]]


def content_problems(items: Sequence[Component], findings: Findings) -> list[tuple[int, str]]:
    """Return ``(index, problem)`` for what a provider's ``findings`` reject inside the messages."""
    return [(index, problem) for index, problem, _, _ in findings(items)]


def repair_content(
    items: Sequence[Component], findings: Findings
) -> tuple[list[Component], list[int], list[tuple[int, str]]]:
    """Return the repaired components, each one's input index, and the changes made.

    What cannot be repaired (missing thinking) is left as it is; its problem
    stays for the validator to report.
    """
    last: dict[int, Any] = {}
    changes: list[tuple[int, str]] = []
    for index, _, change, replacement in findings(items):
        if replacement is ...:
            continue
        last[index] = replacement  # the later finding holds the earlier's repair
        changes.append((index, change))
    fixed: list[Component] = []
    origin: list[int] = []
    for index, component in enumerate(items):
        replacement = last.get(index, component)
        if replacement is not None:
            fixed.append(replacement)
            origin.append(index)
    return fixed, origin, changes
