"""The options the subcommands share, and the choices they take."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import click

from .._core.pins import PinPredicate, pin_nothing, pin_system, pin_system_and_initial_user
from .._formats.files import TranscriptFormat
from .._formats.registry import PROVIDERS

#: ``--pin`` choices and the predicates they stand for.
PINS: Final[dict[str, PinPredicate]] = {
    "system": pin_system,
    "system+user": pin_system_and_initial_user,
    "none": pin_nothing,
}

#: ``--format`` choices and the transcript formats they stand for.
#: OpenAI Chat's files (a JSON array, JSONL), then every other wire format by its name.
FORMATS: Final[dict[str, TranscriptFormat]] = {
    "openai": "json",
    "jsonl": "jsonl",
    **{name: name for name in PROVIDERS if name != "openai"},
}

#: ``--boundary`` choices: where a budget compaction may begin the recent part.
BOUNDARIES: Final = ("model_step", "user_turn")

CONTEXT: Final[dict[str, Any]] = {
    "help_option_names": ["-h", "--help"],
    "max_content_width": 100,
}

#: The conversation file a command reads: standard input when it is left out or ``-``.
FILE: Final = click.argument("file", required=False, metavar="[FILE]")


def command(name: str, help: str, short_help: str) -> Callable[[Callable[..., Any]], click.Command]:
    """A subcommand: ``help`` in full for ``NAME -h``, ``short_help`` in the list of commands."""
    return click.command(name, help=help, short_help=short_help, context_settings=CONTEXT)


def _tokens(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Return a positive number of tokens; ``8000``, ``8_000`` and ``8,000`` all work."""
    if value is None:
        return None
    try:
        tokens = int(str(value).replace("_", "").replace(",", ""))
    except ValueError:
        tokens = 0
    if tokens <= 0:
        raise click.BadParameter(f"{value!r} is not a positive number of tokens", ctx, param)
    return tokens


def tokens_option(*names: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes a number of tokens."""
    return click.option(*names, metavar="TOKENS", callback=_tokens, **kwargs)


def count_option(
    *names: str, help: str, default: int | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes a number of messages, N >= 0."""
    return click.option(
        *names,
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        metavar="N",
        help=help,
    )


def choice_option(
    name: str, choices: Sequence[str], *, help: str, default: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A click option that takes one of ``choices``."""
    return click.option(
        name,
        type=click.Choice(list(choices)),
        default=default,
        show_default=default is not None,
        help=help,
    )


def format_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--format`` option: the input's format, detected by default."""
    return click.option("--format", "fmt", type=click.Choice(list(FORMATS)), help=help)
