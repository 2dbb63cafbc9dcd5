"""Every error mellea-ctx raises on purpose.

One root, and each subclass also inherits the builtin a caller would expect,
so ``except ValueError`` keeps working for code that does not know us::

    MelleaCtxError
    ├── InvalidComponentError        (ValueError)   a component field is wrong
    ├── InvalidArgumentError         (ValueError)   a function or constructor argument is wrong
    ├── InvalidContextError          (ValueError)   a history or transcript file breaks a
    │                                               provider's rules or format
    ├── NotInlineCompactorError      (TypeError)    a compactor that may not ride inside a context
    ├── TokenizerDataError           (RuntimeError) the offline BPE data is missing or corrupt
    ├── BackendError                 (RuntimeError) a model call failed
    │   ├── RateLimitError                          the provider said 429 (retryable)
    │   ├── BackendTimeoutError      (TimeoutError) no answer in time (retryable)
    │   ├── BackendConnectionError   (ConnectionError) the connection failed (retryable)
    │   ├── ServerError                             the provider answered 5xx (retryable)
    │   ├── RequestRejectedError                    the provider answered 4xx (not retryable)
    │   │   └── ContextOverflowError                the request is longer than the window
    │   └── MalformedResponseError                  the answer could not be understood
    ├── CompactionError              (RuntimeError) a compaction could not be applied
    │   ├── EmptySummaryError                       the summary came back empty
    │   ├── SummaryToolCallError                    the summarizer asked for tools
    │   ├── CompactionTimeoutError   (TimeoutError) the compaction ran out of time
    │   └── SpanTooLargeError                       one message of the span cannot fit the
    │                                               summarizer's window, even shortened
    ├── SessionConflictError         (RuntimeError) another writer changed the session first
    └── SessionStoreError            (RuntimeError) a session store failed (locked, unreachable)

Messages name the bad argument, show its value with ``repr``, say what was
expected, and suggest the fix.
"""

from __future__ import annotations


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


class BackendError(MelleaCtxError, RuntimeError):
    """A model call failed. ``retryable`` says whether trying again may help.

    Provider SDK exceptions are mapped to a subclass at the backend boundary,
    with the original chained as ``__cause__``.
    """

    retryable: bool = False

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class RateLimitError(BackendError):
    """The provider refused the call for now (HTTP 429)."""

    retryable = True

    def __init__(
        self, message: str, *, status_code: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after = retry_after


class BackendTimeoutError(BackendError, TimeoutError):
    """The provider did not answer in time."""

    retryable = True


class BackendConnectionError(BackendError, ConnectionError):
    """The connection to the provider failed or broke."""

    retryable = True


class ServerError(BackendError):
    """The provider failed on its side (HTTP 5xx)."""

    retryable = True


class RequestRejectedError(BackendError):
    """The provider rejected the request (HTTP 4xx other than 429); retrying will not help."""


class ContextOverflowError(RequestRejectedError):
    """The request is longer than the model's context window (the provider said so).

    Each provider phrases it its own way (OpenAI's ``context_length_exceeded``,
    Anthropic's "prompt is too long", llama.cpp's ``exceed_context_size_error``,
    vLLM's "maximum context length"); the backends map them all here. Retrying
    the same request will not help; compacting it may (``react`` does, once).

    Attributes:
        prompt_tokens: The request's size as the provider counted it, when it said.
        limit_tokens: The window as the provider stated it, when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = 400,
        prompt_tokens: int | None = None,
        limit_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.prompt_tokens = prompt_tokens
        self.limit_tokens = limit_tokens


class MalformedResponseError(BackendError):
    """The provider's answer could not be parsed as a completion."""


class CompactionError(MelleaCtxError, RuntimeError):
    """A compaction could not be applied; the context was left as it was."""


class EmptySummaryError(CompactionError):
    """The summarizer returned no text."""


class SummaryToolCallError(CompactionError):
    """The summarizer answered with tool calls instead of a summary."""


class CompactionTimeoutError(CompactionError, TimeoutError):
    """The compaction did not finish within its timeout."""


class SpanTooLargeError(CompactionError):
    """One unit of the span (a message) cannot fit the summarizer's window, even shortened."""


class SessionConflictError(MelleaCtxError, RuntimeError):
    """A session write was based on a version another writer had already moved past.

    Raised instead of writing, so nothing is lost: reload the session, redo the
    turn on the fresh snapshot, and commit again.

    Attributes:
        session_id: The session written to.
        expected_version: The version the write was based on.
        actual_version: The version the store holds.
    """

    def __init__(self, session_id: str, expected_version: int, actual_version: int) -> None:
        msg = (
            f"session {session_id!r} is at version {actual_version}, not at "
            f"expected_version={expected_version!r}: another writer changed it first, and "
            f"nothing was written; reload it with memory.open({session_id!r}) and retry the turn"
        )
        super().__init__(msg)
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version

    def __reduce__(self) -> tuple[type[SessionConflictError], tuple[str, int, int]]:
        return type(self), (self.session_id, self.expected_version, self.actual_version)


class SessionStoreError(MelleaCtxError, RuntimeError):
    """A session store could not do what was asked: locked too long, unreachable, or damaged.

    The store's own exception (``sqlite3.Error``, ``redis.RedisError``) is chained
    as ``__cause__``. A write that raised this was applied whole or not at all,
    but when the connection broke after the server received it, the caller
    cannot tell which: reload the session and look before writing again.
    """
