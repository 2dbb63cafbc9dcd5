"""Every error mellea-ctx raises on purpose.

One root, and each subclass also inherits the builtin a caller would expect,
so ``except ValueError`` keeps working for code that does not know us::

    MelleaCtxError
    ├── InvalidComponentError        (ValueError)  a component field is wrong
    ├── InvalidArgumentError         (ValueError)  a function or constructor argument is wrong
    ├── InvalidContextError          (ValueError)  a history (or a transcript file) breaks a
    │                                              provider's rules or format
    ├── NotInlineCompactorError      (TypeError)   a compactor that may not ride inside a context
    └── TokenizerDataError           (RuntimeError) the offline BPE data is missing or corrupt

Messages name the bad argument, show its value with ``repr``, say what was
expected, and suggest the fix.
"""

from __future__ import annotations

__all__ = [
    "InvalidArgumentError",
    "InvalidComponentError",
    "InvalidContextError",
    "MelleaCtxError",
    "NotInlineCompactorError",
    "TokenizerDataError",
]


class MelleaCtxError(Exception):
    """The root of every error mellea-ctx raises on purpose."""


class InvalidComponentError(MelleaCtxError, ValueError):
    """A component was built with a value it cannot hold (a bad role, a non-string content)."""


class InvalidArgumentError(MelleaCtxError, ValueError):
    """An argument to a constructor or function is out of its allowed range."""


class InvalidContextError(MelleaCtxError, ValueError):
    """A history breaks a provider's rules (a tool result without its call, an unknown role).

    Also raised for a transcript that cannot be read as one, such as a file
    that is not valid JSON; the message names the file, line or message, and field.
    """


class NotInlineCompactorError(MelleaCtxError, TypeError):
    """A compactor that may call a model on every add was attached to a context."""


class TokenizerDataError(MelleaCtxError, RuntimeError):
    """The bundled BPE data for the default token counter is missing or fails its hash check."""
