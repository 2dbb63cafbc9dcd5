"""Read the summarizer's quoted transcript back into components.

A summary request quotes the span as a transcript of bracketed headers
(``[user]``, ``[assistant called Bash id=c1]``, ``[tool Bash result id=c1]``,
``[earlier checkpoint]``), each component's continuation lines indented by
two spaces (``render_conversation`` in the compaction layer writes it). The
offline :class:`~mellea_ctx.ExtractiveBackend` sees only that text, yet its
exact details are best chosen from components, as the summary engine chooses
them: tool-call arguments parsed, tool output read as output, an earlier
checkpoint's carried details first. This module turns the text back into
such components; what it cannot place stays an assistant message, so no
text is lost to the reading.

It also writes the block of exact details an extractive summary ends with
(one line per kind, under ``Exact details:``), which it reads back as the
carried details of an earlier checkpoint, so a chain of extractive
compactions keeps them first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._core.checkpoint import Checkpoint
from .._core.components import Component, Message, Role, ToolCall, ToolMessage
from .._core.facts import Fact
from .._core.tokens import default_counter

__all__ = ["DETAILS_HEADING", "detail_block", "details_that_fit", "read_transcript"]

#: The line that opens the exact details of an extractive summary (and of a checkpoint's render).
DETAILS_HEADING = "Exact details:"

_HEADER = re.compile(r"^\[([^\]\n]{1,200})\] ?", re.M)
_CALLED = re.compile(r"^(\w+)(?: \S+)? called (\S+) id=(\S+)$")
_RESULT = re.compile(r"^tool (\S+) result id=(\S+)$")
_SPEAKER = re.compile(r"^(user|assistant|system|developer)(?: \S+)?$")
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "developer",
}
_INDENT = re.compile(r"(\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029])  ")
# How each kind of detail is headed in a summary, in the order the kinds are listed.
_LABELS = {
    "detail": "carried",
    "constraint": "constraints",
    "decision": "decisions",
    "commit": "commits",
    "result": "results",
    "error": "errors",
    "path": "files",
    "command": "commands",
    "id": "ids",
    "quantity": "numbers",
    "url": "urls",
}
_LABELS_ORDER = list(_LABELS)
_KIND_LINE = re.compile(r"^- [a-z]+: (.+)$")
_DEFUSED_TAG = re.compile(r"&lt;(?=\s*/?\s*(?:conversation|focus)\b)", re.I)


def _unquote(body: str) -> str:
    """Undo the transcript's quoting: continuation lines lose their two-space indent."""
    text = _INDENT.sub(r"\1", body.rstrip("\n"))
    return _DEFUSED_TAG.sub("<", text)


def _checkpoint(body: str) -> Component:
    """An earlier checkpoint: its summary, and the details it carried, as a checkpoint again."""
    summary, details = body, []
    heading = summary.find(DETAILS_HEADING)
    if heading >= 0:
        summary, rest = summary[:heading].rstrip(), summary[heading + len(DETAILS_HEADING) :]
        for line in rest.strip().splitlines():
            line = line.strip().removeprefix(DETAILS_HEADING).strip()
            kind_line = _KIND_LINE.match(line)
            items = kind_line.group(1) if kind_line else line
            details += [item.strip() for item in items.split("; ") if item.strip()]
    if not summary.strip():
        summary = body
    return Checkpoint(summary, preserved=tuple(dict.fromkeys(details)))


def _component(header: str, body: str) -> Component:
    if header == "earlier checkpoint":
        return _checkpoint(body)
    called = _CALLED.match(header)
    if called is not None:
        role, name, call_id = called.groups()
        return Message(
            _ROLES.get(role, "assistant"), None, tool_calls=[ToolCall(call_id, name, body or "{}")]
        )
    result = _RESULT.match(header)
    if result is not None:
        name, call_id = result.groups()
        return ToolMessage(body, tool_call_id=call_id, name=name)
    speaker = _SPEAKER.match(header)
    if speaker is not None:
        return Message(_ROLES[speaker.group(1)], body)
    return Message("assistant", f"[{header}] {body}")


def read_transcript(text: str, *, start: int = 0, end: int | None = None) -> list[Component]:
    """Return the components a quoted transcript was rendered from, as nearly as text allows.

    Text before the first header (or all of it, when there is none) becomes
    a user message. A header this reader does not know keeps its text, with
    the header, in an assistant message.

    Examples:
        >>> said = '[user] Run it.\\n[assistant called Bash id=c1] {"command": "ls"}'
        >>> said += "\\n[tool Bash result id=c1] a.py\\n  b.py"
        >>> [type(c).__name__ for c in read_transcript(said)]
        ['Message', 'Message', 'ToolMessage']
        >>> read_transcript(said)[2].content
        'a.py\\nb.py'

    ``start`` and ``end`` read ``text[start:end]`` without copying it out
    (``start`` is 0 or follows a newline, where a header may begin).
    """
    stop = len(text) if end is None else end
    headers = list(_HEADER.finditer(text, start, stop))
    found: list[Component] = []
    lead = text[start : headers[0].start()] if headers else text[start:stop]
    if lead.strip():
        found.append(Message("user", lead.strip()))
    for index, header in enumerate(headers):
        until = headers[index + 1].start() if index + 1 < len(headers) else stop
        body = _unquote(text[header.end() : until])
        try:
            found.append(_component(header.group(1), body))
        except ValueError:  # a value the component refuses (an empty summary, say)
            if body.strip():
                found.append(Message("assistant", body))
    return found


def detail_block(facts: Sequence[Fact]) -> str:
    """Return the ``Exact details:`` lines for ``facts``, one line per kind.

    Examples:
        >>> facts = [Fact("path", "src/a.py"), Fact("command", "make"), Fact("path", "b.md")]
        >>> print(detail_block(facts))
        Exact details:
        - files: src/a.py; b.md
        - commands: make
    """
    if not facts:
        return ""
    by_kind: dict[str, list[str]] = {}
    for fact in facts:
        by_kind.setdefault(fact.kind, []).append(fact.text)
    lines = [DETAILS_HEADING]
    for kind in sorted(by_kind, key=_LABELS_ORDER.index):
        lines.append(f"- {_LABELS[kind]}: " + "; ".join(by_kind[kind]))
    return "\n".join(lines)


def details_that_fit(facts: Sequence[Fact], budget: int) -> int:
    """The most leading ``facts`` whose block fits in ``budget`` tokens (a binary search)."""
    counter = default_counter()
    low, high = 0, len(facts)
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count_text(detail_block(facts[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return low
