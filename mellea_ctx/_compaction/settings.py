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

__all__ = ["Settings", "make_settings", "validate_settings"]


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


@attrs.define(frozen=True, slots=True)
class Settings:
    """What both summarizing compactors are configured with."""

    default_backend: Backend | None
    pin_predicate: PinPredicate
    prompt_template: str
    model_options: Mapping[str, Any]
    timeout: float
    retries: int
    strict: bool
    preserve_facts: bool
    keep_replaced: bool
    on_record: RecordHook | None
    request: Request = "quoted"


def make_settings(
    default_backend: Backend | None,
    pin_predicate: PinPredicate,
    prompt_template: str | None,
    model_options: Mapping[str, Any] | None,
    timeout: float,
    retries: int,
    strict: bool,
    preserve_facts: bool,
    keep_replaced: bool,
    on_record: RecordHook | None,
    request: Request = "quoted",
) -> Settings:
    template = (
        DEFAULT_PROMPT_TEMPLATE
        if prompt_template is None
        else validate_prompt_template(prompt_template)
    )
    return Settings(
        default_backend=default_backend,
        pin_predicate=pin_predicate,
        prompt_template=template,
        model_options=dict(model_options or {}),
        timeout=timeout,
        retries=retries,
        strict=strict,
        preserve_facts=preserve_facts,
        keep_replaced=keep_replaced,
        on_record=on_record,
        request=request,
    )
