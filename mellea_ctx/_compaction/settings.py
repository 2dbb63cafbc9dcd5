"""What both summarizing compactors are configured with: ``Settings``, checked and built once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._core.exceptions import InvalidArgumentError
from .._core.pins import PinPredicate
from .._core.protocols import Backend
from .continuation import Request, validate_request
from .prompts import DEFAULT_PROMPT_TEMPLATE, validate_prompt_template
from .records import RecordHook

__all__ = ["Settings", "validate_settings"]


def validate_settings(owner: str, settings: Settings) -> None:
    backend = settings.default_backend
    if backend is not None and not callable(getattr(backend, "generate", None)):
        msg = (
            f"{owner}: default_backend={backend!r} has no generate() method; pass a Backend "
            "such as OpenAIBackend(...) or ExtractiveBackend()"
        )
        raise InvalidArgumentError(msg)
    timeout = settings.timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        msg = f"{owner}: timeout={timeout!r} must be a number of seconds > 0"
        raise InvalidArgumentError(msg)
    retries = settings.retries
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        msg = f"{owner}: retries={retries!r} must be an int from 0 to 10"
        raise InvalidArgumentError(msg)
    if not callable(settings.pin_predicate):
        msg = f"{owner}: pin_predicate={settings.pin_predicate!r} is not callable"
        raise InvalidArgumentError(msg)
    validate_request(owner, settings.request)
    if settings.on_record is not None and not callable(settings.on_record):
        msg = f"{owner}: on_record={settings.on_record!r} is not callable"
        raise InvalidArgumentError(msg)


def _template(template: str | None) -> str:
    return DEFAULT_PROMPT_TEMPLATE if template is None else validate_prompt_template(template)


def _options(options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(options or {})


@attrs.define(frozen=True, slots=True, kw_only=True)
class Settings:
    """What both summarizing compactors are configured with.

    Built from their keywords as given: ``prompt_template=None`` is the
    default template (another one is checked), ``model_options=None`` none;
    :func:`validate_settings` checks the rest for the compactor that owns it.
    """

    default_backend: Backend | None
    pin_predicate: PinPredicate
    prompt_template: str = attrs.field(converter=_template)
    model_options: Mapping[str, Any] = attrs.field(converter=_options)
    timeout: float
    retries: int
    strict: bool
    preserve_facts: bool
    keep_replaced: bool
    on_record: RecordHook | None
    request: Request = "quoted"
