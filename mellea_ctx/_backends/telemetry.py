"""Telemetry: the ``mellea_ctx`` logger and, when OpenTelemetry is configured, spans.

Logging: one stdlib logger, ``logging.getLogger("mellea_ctx")``, with a
``NullHandler`` so nothing is printed until the application configures
logging. Each compaction is an INFO line (strategy, outcome, tokens before and
after), a failed one a WARNING (an ERROR when the context it left is still
over the compactor's target), each retry of a summary request a WARNING, and
each failed provider request a DEBUG line before it is raised.

Tracing: with ``opentelemetry-api`` installed (``pip install
'.[otel]'``) and a tracer provider set by the application, each
compaction is a span ``compact {strategy}`` and each summary request a child
span ``chat {model}``, with the GenAI semantic conventions' attributes
(``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``error.type``) and ours
under ``mellea_ctx.compaction.*`` (strategy, outcome, tokens before and after).

Neither costs anything unconfigured: a log call is skipped by the level check
and no span is made while OpenTelemetry's global provider is its default
proxy (or the package is not installed).

This module sits in the backends layer because compaction may not import
OpenTelemetry itself (pyproject's import-linter contracts).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

#: The name of the package's logger.
LOGGER_NAME: Final = "mellea_ctx"

logger = logging.getLogger(LOGGER_NAME)
logger.addHandler(logging.NullHandler())

#: The instrumentation scope of our spans.
_SCOPE: Final = "mellea_ctx"
#: Prefix of the attributes that are ours, not the conventions'.
_OURS: Final = "mellea_ctx.compaction."

_trace: Any = None  # the opentelemetry.trace module, once imported; False when it is missing


def _tracer() -> Any:
    """The tracer to use, or ``None`` while OpenTelemetry is missing or unconfigured."""
    global _trace
    if _trace is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _trace = False
        else:
            _trace = trace
    if _trace is False:
        return None
    provider = _trace.get_tracer_provider()
    if isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)):
        return None
    return provider.get_tracer(_SCOPE)


def _provider_name(backend: object) -> str:
    return str(getattr(backend, "provider", type(backend).__name__)).lower()


#: Set while a ``compact {strategy}`` span of ours is the current one.
_in_compaction: ContextVar[bool] = ContextVar("mellea_ctx_in_compaction", default=False)


@contextmanager
def compaction_span(strategy: str) -> Iterator[None]:
    """Run the body inside a ``compact {strategy}`` span (nothing when tracing is off).

    :func:`observe_compaction` fills in the span's attributes from the record.
    """
    tracer = _tracer()
    if tracer is None:
        yield
        return
    attributes = {"gen_ai.operation.name": "compact", f"{_OURS}strategy": strategy}
    token = _in_compaction.set(True)
    try:
        with tracer.start_as_current_span(f"compact {strategy}", attributes=attributes):
            yield
    finally:
        _in_compaction.reset(token)


def observe_compaction(record: Any) -> None:
    """Log one compaction record and put it on a compaction span.

    Inside a :func:`compaction_span` (a summary's), the record annotates that
    span; elsewhere (a clearing, a tiered compaction's verdict, a skipped
    plan) it gets a ``compact {strategy}`` span of its own, never the
    application's current span.
    """
    if _in_compaction.get() or _tracer() is None:
        _observe(record)
        return
    with compaction_span(record.strategy):
        _observe(record)


@contextmanager
def model_call_span(backend: object, usage_of: list[Any]) -> Iterator[None]:
    """Run one summary request inside a ``chat {model}`` client span (nothing when off).

    The answer's usage also goes to :data:`usage_sink` when it is set.

    Args:
        backend: The backend asked; its ``model`` and ``provider`` name the span.
        usage_of: A list the body appends the output to, for the usage attributes.
    """
    tracer = _tracer()
    if tracer is None:
        yield
        _collect(usage_of)
        return
    model = getattr(backend, "model", None)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _provider_name(backend),
    }
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    name = f"chat {model}" if isinstance(model, str) else "chat"
    kind = _trace.SpanKind.CLIENT
    with tracer.start_as_current_span(name, kind=kind, attributes=attributes) as span:
        try:
            yield
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise
        usage = getattr(usage_of[-1], "usage", None) if usage_of else None
        if usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
    _collect(usage_of)


#: While set, the usage of every summary request answered (in :func:`model_call_span`)
#: is appended to it: ``react`` sets it for its run, to bill summaries with its own calls.
usage_sink: ContextVar[list[Any] | None] = ContextVar("mellea_ctx_usage_sink", default=None)


def _collect(usage_of: list[Any]) -> None:
    sink = usage_sink.get()
    usage = getattr(usage_of[-1], "usage", None) if usage_of else None
    if sink is not None and usage is not None:
        sink.append(usage)


def observing() -> bool:
    """Whether :func:`observe_compaction` would log or trace anything now (a cheap check).

    A compactor that runs on every add builds its record only when someone
    reads it: a hook, a sink, the logger at INFO, or a configured tracer.
    """
    return logger.isEnabledFor(logging.INFO) or _tracer() is not None


def _observe(record: Any) -> None:
    """Log ``record`` and set it on the current span.

    ``record`` is a :class:`~mellea_ctx.CompactionRecord` (typed loosely: the
    records live in the layer above).
    """
    outcome = record.outcome
    level = logging.INFO
    if outcome == "failed":
        level = logging.ERROR if record.over_target else logging.WARNING
    if logger.isEnabledFor(level):
        detail = f": {record.reason}" if record.reason else ""
        logger.log(
            level,
            "compaction %s by %s: %d -> %d tokens, %d -> %d components%s",
            outcome,
            record.strategy,
            record.tokens_before,
            record.tokens_after,
            record.components_before,
            record.components_after,
            detail,
            extra={"compaction": record},
        )
    if _tracer() is None:
        return
    span = _trace.get_current_span()
    if not span.is_recording():
        return
    fields: Mapping[str, Any] = {
        "strategy": record.strategy,
        "outcome": outcome,
        "tokens_before": record.tokens_before,
        "tokens_after": record.tokens_after,
        "components_before": record.components_before,
        "components_after": record.components_after,
        "attempts": record.attempts,
        "over_target": record.over_target,
    }
    span.set_attributes({f"{_OURS}{key}": value for key, value in fields.items()})
    # A planner's ledger (predicted cost, saving, break-even steps), when there is one.
    ledger = ("predicted_cost", "predicted_saving", "break_even_steps", "forced")
    priced = {key: getattr(record, key, None) for key in ledger}
    span.set_attributes({f"{_OURS}{k}": v for k, v in priced.items() if v is not None})
    if outcome == "failed":
        error = record.error or ""
        span.set_attribute("error.type", error.partition("(")[0] or "CompactionError")
        span.set_status(_trace.Status(_trace.StatusCode.ERROR, record.reason))


def observe_retry(owner: str, attempt: int, retries: int, delay: float, error: Exception) -> None:
    """Log a summary request that failed and is about to be sent again (WARNING)."""
    logger.warning(
        "%s: summary request failed (%s: %s); retry %d of %d in %.2fs",
        owner,
        type(error).__name__,
        error,
        attempt,
        retries,
        delay,
    )


def observe_request_failure(backend: object, error: Exception) -> None:
    """Log a provider request that failed, before the mapped error is raised (DEBUG)."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s request to %s failed: %s: %s",
            getattr(backend, "provider", type(backend).__name__),
            getattr(backend, "model", "?"),
            type(error).__name__,
            error,
        )
