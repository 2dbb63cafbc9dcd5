"""``short_repr``: a value shown in an error message, on one short line, whatever it is.

An error message shows the bad value with ``repr``, but some values cannot be
shown that way: ``repr`` of a list nested 100,000 deep raises
``RecursionError``, and that of an int with more than 4,300 digits raises
``ValueError``. Raising those while building the message would replace the
clear error with an internal one, so every message goes through here.
"""

from __future__ import annotations

from typing import Any


def short_repr(value: object, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, or a placeholder when it fails.

    Examples:
        >>> short_repr("x" * 100, limit=12)
        "'xxxxxxxx..."
        >>> short_repr(10**5000)
        '<int too large to show>'
    """
    if isinstance(value, (str, bytes)) and len(value) > limit:
        value = value[:limit]  # the repr of a 1 MB string is cut anyway
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deep, or an int too long for str()
        text = f"<{type(value).__name__} too large to show>"
    except Exception:  # a user's object whose __repr__ itself fails
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def field_repr(instance: object) -> str:
    """``ClassName(field=value, ...)`` for an attrs instance, leaving out fields at their default.

    Content parts that are one plain text show as ``content='...'``; an empty
    ``extra`` and a ``structured`` flag that says what the parts already imply
    are left out too, so a plain message reads as it was written.

    Examples:
        >>> from mellea_ctx import Message, ToolCall
        >>> Message("user", "hi")
        Message(role='user', content='hi')
        >>> ToolCall("call_1", "ls")
        ToolCall(id='call_1', name='ls', arguments='{}')
    """
    import attrs

    cls = type(instance)
    shown = []
    for field in attrs.fields(cls):  # type: ignore[arg-type]
        value = getattr(instance, field.name)
        name = field.alias or field.name
        text = _special(instance, field.name, name, value)
        if text is None:  # no rule of its own: left out at its default
            text = "" if _at_default(field, value) else f"{name}={value!r}"
        if text:
            shown.append(text)
    return f"{cls.__name__}({', '.join(shown)})"


def _one_text(parts: Any) -> bool:
    """Whether ``parts`` is one text part (by the class name: this module imports no part)."""
    return len(parts) == 1 and type(parts[0]).__name__ == "TextPart"


def _special(instance: object, field: str, name: str, value: Any) -> str | None:
    """How a field with a rule of its own shows: text, ``""`` (left out), ``None`` (no rule)."""
    if field == "parts":
        return _content(value) if name == "content" else _output_parts(instance, value)
    if field == "structured":  # left out when the parts imply it
        parts = getattr(instance, "parts", ())
        return "" if value == (bool(parts) and not _one_text(parts)) else f"{name}={value!r}"
    if field == "arguments":
        return f"{name}={value!r}"  # always shown: the call reads better with it
    return None


def _content(parts: Any) -> str | None:
    """A message's parts: ``content='...'`` when they are one plain text (or none)."""
    if not parts:
        return "content=None"
    if _one_text(parts) and not parts[0].extra:
        return f"content={parts[0].text!r}"
    return None


def _output_parts(instance: object, parts: Any) -> str | None:
    """A model output's parts: left out when its ``value`` implies them."""
    text = getattr(instance, "value", None)
    if not parts and not text:
        return ""
    plain = _one_text(parts) and not parts[0].extra and parts[0].text == text
    return "" if plain else None


def _at_default(field: Any, value: Any) -> bool:
    """Whether a field is left out: a keyword (or ``extra``) at its plain default, or no extra."""
    import attrs

    if field.default is not attrs.NOTHING and not hasattr(field.default, "factory"):
        return bool(value == field.default and (field.kw_only or field.name == "extra"))
    return field.name == "extra" and not value
