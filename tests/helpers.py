"""Small helpers the example-based tests share."""

from __future__ import annotations

from mellea_ctx import ChatContext, Component


def build(*components: Component, **kwargs: object) -> ChatContext:
    """Return a context made by adding ``components`` one by one to ``ChatContext(**kwargs)``."""
    ctx = ChatContext(**kwargs)  # type: ignore[arg-type]
    for component in components:
        ctx = ctx.add(component)
    return ctx
