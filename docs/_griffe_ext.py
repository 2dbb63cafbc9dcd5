"""griffe extensions for the docs build (``mkdocs.yml`` loads them; not part of the package).

``AttrsInit``: griffe reads source statically, and attrs writes ``__init__`` at import
time, so the ``Args:`` of an attrs class would name parameters griffe cannot see (a
warning under ``mkdocs build --strict``). For each class of the package that attrs
decorated, it imports the class and adds an ``__init__`` with the signature attrs made.

``SphinxRoles``: the docstrings cross-reference with Sphinx roles (``:class:`X```),
which Markdown would show as they are. Each becomes a link when it names a public
object (``mellea_ctx.__all__``, or a member of one) and inline code otherwise.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
}


def _default(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    name = getattr(value, "__name__", None)
    return name if callable(value) and name else repr(value)


class AttrsInit(griffe.Extension):
    """Give each attrs class of ``mellea_ctx`` the ``__init__`` attrs generated."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if not cls.path.startswith("mellea_ctx.") or "__init__" in cls.members:
            return
        runtime = getattr(importlib.import_module(cls.module.path), cls.name, None)
        if runtime is None or not hasattr(runtime, "__attrs_attrs__"):
            return
        signature = inspect.signature(runtime.__init__)
        parameters = griffe.Parameters(
            *(
                griffe.Parameter(
                    p.name,
                    annotation=None if p.annotation is inspect.Parameter.empty else p.annotation,
                    kind=_KINDS[p.kind],
                    default=_default(p.default),
                )
                for p in signature.parameters.values()
            )
        )
        init = griffe.Function("__init__", parameters=parameters, returns="None", parent=cls)
        cls.set_member("__init__", init)


_ROLE = re.compile(r":(?:class|func|meth|attr|exc|mod|data|obj):`(~?)([\w.]+)`")


def _public() -> set[str]:
    return set(importlib.import_module("mellea_ctx").__all__)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx cross-reference roles in the package's docstrings as Markdown."""

    def __init__(self) -> None:
        self.public = _public()

    def _markdown(self, match: re.Match[str]) -> str:
        short, target = match.group(1) == "~", match.group(2)
        path = target.removeprefix("mellea_ctx.")
        text = path.rsplit(".", 1)[-1] if short else path
        if path.split(".", 1)[0] in self.public:
            return f"[`{text}`][mellea_ctx.{path}]"
        return f"`{text}`"

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and obj.path.startswith("mellea_ctx"):
            obj.docstring.value = _ROLE.sub(self._markdown, obj.docstring.value)
