"""LLMSummarizeCompactor: older history replaced with a model-written checkpoint.

The model-calling compactors share one engine (:mod:`.engine`): pick a span
that starts after the pinned prefix and ends on a safe cut, render it as
quoted data, ask the backend for a summary (bounded retries, one overall
timeout), check the summary for the exact details of the span and carry the
lost ones over, and apply the :class:`~mellea_ctx.Checkpoint` only if it is
smaller than what it replaces. What differs is how the span is chosen:

* :class:`LLMSummarizeCompactor` (here) keeps the last ``keep_n`` body components;
* :class:`~mellea_ctx.TokenBudgetCompactor` (:mod:`.token_budget`) fires past
  a token budget and keeps at least ``keep_recent_tokens`` of recent
  dialogue, in whole user turns.

A failure (backend error, timeout, empty summary, a summary made of tool
calls) returns the input context itself, unchanged, warns with a
:class:`~mellea_ctx.CompactionWarning` and reports a ``failed`` record; with
``strict=True`` it raises the typed error instead. Cancellation is reported
and re-raised. The input is never modified either way. Riding inline, a
failed compaction starts a failure backoff (:mod:`.backoff`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._core.boundaries import is_safe_cut
from .._core.checkpoint import Checkpoint
from .._core.checks import require_int
from .._core.pins import PinPredicate, pin_system
from .._core.protocols import Backend, BaseCompactor, CompactCall, Steps
from .backoff import validate_backoff
from .continuation import Request
from .effort import with_reasoning_effort
from .engine import Engine, span_start
from .records import RecordHook
from .settings import Settings, validate_settings

if TYPE_CHECKING:
    from .._core.context import ChatContext


class LLMSummarizeCompactor(BaseCompactor):
    """Replace older body components with one model-written checkpoint; keep the last ``keep_n``.

    The pinned prefix (by default the system prompt: mellea's default pins
    nothing and summarizes the system prompt away) stays verbatim. Body
    components older than the last ``keep_n`` become one
    :class:`~mellea_ctx.Checkpoint` placed right after the prefix; the cut
    moves back as needed so no tool exchange is split. An earlier checkpoint
    in the span is shown to the model as a checkpoint, so the new summary
    extends it instead of paraphrasing a paraphrase.

    This compactor calls a model every time it has something to do, so it may
    not ride inside a context on its own: gate it with
    ``ThresholdCompactor(LLMSummarizeCompactor(...), threshold=...)`` or call
    ``compact`` between turns.

    Args:
        default_backend: The backend used when ``compact`` gets none.
        keep_n: Recent body components kept verbatim; ``0`` summarizes the whole body.
        pin_predicate: Where the protected prefix ends.
        prompt_template: A prompt with exactly one field, ``{conversation}``;
            checked here, not at compaction time.
        model_options: Passed to the backend (``max_tokens``, ``temperature``...).
        timeout: Seconds for the whole compaction, retries included.
        retries: Extra attempts for retryable backend errors (rate limits,
            timeouts, connection errors, 5xx), with exponential backoff.
        strict: Raise the typed error on failure instead of returning the
            context unchanged.
        preserve_facts: Check the summary for the span's exact details and
            carry the lost ones over verbatim.
        keep_replaced: Keep a handle to the replaced context in the checkpoint
            (``Checkpoint.restore()``); turn off to let it be freed.
        on_record: Called with a :class:`~mellea_ctx.CompactionRecord` for each
            compaction attempted.
        backoff_adds: Behind a ``ThresholdCompactor`` inside a context: after a
            failed compaction, the next ``backoff_adds`` adds do not try again
            (doubling with each consecutive failure, up to 16 times); ``0``
            tries on every add. A ``compact`` call of your own always tries.
        reasoning_effort: How hard a reasoning model may think about the
            summary: ``"low"`` by default, ``None`` to send nothing. Sent as the
            ``reasoning_effort`` model option unless ``model_options`` has one;
            ``OpenAIBackend`` passes it to reasoning models, ``AnthropicBackend``
            as ``output_config.effort`` to Claude models with effort control,
            and other models and backends ignore it.

        request: How the summary is asked for. ``"quoted"`` (the default) sends
            the span as a fresh prompt, billed in full. ``"continuation"`` sends
            the context's own messages (and, inside ``react``, the tool
            definitions of the agent's last request) and one final user turn
            asking for the checkpoint, so a provider's prompt cache bills the
            prefix as a cache read; it needs the summarizer to be the agent's own
            model to hit that cache (see docs/summarization.md).
    Raises:
        InvalidArgumentError: For a bad setting, at construction.

    Examples:
        >>> from mellea_ctx import ChatContext, Message, ScriptedBackend
        >>> backend = ScriptedBackend(lambda messages, options: "User greeted; agent replied.")
        >>> ctx = ChatContext()
        >>> for i in range(6):
        ...     ctx = ctx.add(Message("user", f"hello number {i}, how are you doing today?"))
        >>> small = LLMSummarizeCompactor(default_backend=backend, keep_n=2).compact(ctx)
        >>> [type(c).__name__ for c in small.as_list()]
        ['Checkpoint', 'Message', 'Message']
    """

    def __init__(
        self,
        *,
        default_backend: Backend | None = None,
        keep_n: int = 5,
        pin_predicate: PinPredicate = pin_system,
        prompt_template: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        strict: bool = False,
        preserve_facts: bool = True,
        keep_replaced: bool = True,
        on_record: RecordHook | None = None,
        backoff_adds: int = 8,
        reasoning_effort: str | None = "low",
        request: Request = "quoted",
    ) -> None:
        fix = "pass 0 to summarize the whole body"
        require_int("LLMSummarizeCompactor", "keep_n", keep_n, fix=fix)
        self.keep_n = keep_n
        self.backoff_adds = validate_backoff("LLMSummarizeCompactor", backoff_adds)
        self.settings = Settings(
            default_backend=default_backend,
            pin_predicate=pin_predicate,
            prompt_template=prompt_template,
            model_options=with_reasoning_effort(
                "LLMSummarizeCompactor", model_options, reasoning_effort
            ),
            timeout=timeout,
            retries=retries,
            strict=strict,
            preserve_facts=preserve_facts,
            keep_replaced=keep_replaced,
            on_record=on_record,
            request=request,
        )
        validate_settings("LLMSummarizeCompactor", self.settings)
        self._engine = Engine("LLMSummarizeCompactor", self.settings)

    def span(self, ctx: ChatContext) -> tuple[int, int]:
        """Return ``(p, k)``: the span ``items[p:k]`` to summarize (none when ``p == k``)."""
        p, table, _loop = span_start(ctx, ctx, self.settings.pin_predicate)
        n = len(ctx)
        if n - p <= self.keep_n:
            return p, p
        k = n - self.keep_n
        while k > p and not is_safe_cut(ctx, k, table):
            k -= 1
        if k - p == 1 and isinstance(ctx[p], Checkpoint):
            return p, p  # only the previous checkpoint: nothing new to fold in
        return p, k

    def steps(self, call: CompactCall) -> ChatContext | Steps:
        """Summarize ``call.ctx``'s older body into a checkpoint (the step ``compact`` runs).

        ``compact`` / ``acompact`` return ``ctx`` itself when there is nothing
        to summarize, when the summary is not smaller than what it would
        replace, or (unless ``strict``) when the backend fails. ``instructions``
        is a focus the summary should keep (the model's own request, when it
        asked to compact). ``force`` changes nothing: this compactor has no
        trigger of its own. Behind a :class:`~mellea_ctx.ThresholdCompactor`
        riding inline, a model call that leaves ``ctx`` unchanged starts a
        failure backoff of ``backoff_adds`` adds; a call of your own never does.
        """
        p, k = self.span(call.ctx)
        if k <= p:
            return call.ctx
        return self._engine.steps(call, p, k, backoff_adds=self.backoff_adds)

    def __repr__(self) -> str:
        return (
            f"LLMSummarizeCompactor(keep_n={self.keep_n}, "
            f"default_backend={self.settings.default_backend!r})"
        )
