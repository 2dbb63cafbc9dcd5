"""``short_repr``: a value shown in an error message, on one short line, whatever it is.

An error message shows the bad value with ``repr``, but some values cannot be
shown that way: ``repr`` of a list nested 100,000 deep raises
``RecursionError``, and that of an int with more than 4,300 digits raises
``ValueError``. Raising those while building the message would replace the
clear error with an internal one, so every message goes through here.
"""

from __future__ import annotations

__all__ = ["short_repr"]


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
        if field.name == "parts" and name == "content":
            plain = not value or (len(value) == 1 and type(value[0]).__name__ == "TextPart")
            if plain and not (value and value[0].extra):
                shown.append(f"content={value[0].text!r}" if value else "content=None")
                continue
        if field.name == "parts" and name != "content":  # a model output: implied by value?
            text = getattr(instance, "value", None)
            if not value and not text:
                continue
            only = value[0] if len(value) == 1 else None
            plain = only is not None and type(only).__name__ == "TextPart" and not only.extra
            if plain and only is not None and only.text == text:
                continue
        if field.name == "structured":
            parts = getattr(instance, "parts", ())
            implied = not (not parts or (len(parts) == 1 and type(parts[0]).__name__ == "TextPart"))
            if value == implied:
                continue
        elif field.name == "arguments":
            pass  # always shown: the call reads better with it
        elif field.default is not attrs.NOTHING and not hasattr(field.default, "factory"):
            if value == field.default and (field.kw_only or field.name == "extra"):
                continue
        elif field.name == "extra" and not value:
            continue
        shown.append(f"{name}={value!r}")
    return f"{cls.__name__}({', '.join(shown)})"
