"""What both summarizing compactors are configured with: ``Settings``, checked and built once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._core.checks import (
    require_bool,
    require_callable,
    require_int,
    require_method,
    require_number,
)
from .._core.pins import PinPredicate
from .._core.protocols import Backend
from .continuation import Request, validate_request
from .prompts import DEFAULT_PROMPT_TEMPLATE, validate_prompt_template
from .records import RecordHook


def validate_settings(owner: str, settings: Settings) -> None:
    backend = settings.default_backend
    fix = "pass a Backend such as OpenAIBackend(...) or ExtractiveBackend()"
    require_method(owner, "default_backend", backend, "generate()", optional=True, fix=fix)
    require_number(owner, "timeout", settings.timeout, minimum=0, above=True, unit="seconds")
    require_int(owner, "retries", settings.retries, maximum=10)
    require_callable(owner, "pin_predicate", settings.pin_predicate)
    validate_request(owner, settings.request)
    require_callable(owner, "on_record", settings.on_record, optional=True)
    for flag in ("strict", "preserve_facts", "keep_replaced"):
        require_bool(owner, flag, getattr(settings, flag))


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
