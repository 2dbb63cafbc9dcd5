"""``mellea-ctx validate``: check a conversation's tool calls against a provider's rules."""

from __future__ import annotations

import click

from .._formats.call_rules import repair_changes
from .._formats.files import Transcript
from .._formats.registry import PROVIDERS, Provider
from .._formats.transcripts import transcript_document, wire_of
from .changes import Changes, compare, parse_output, unit_of
from .conversation_io import file_problems, load, located, to_stdout, write
from .options import command, format_option
from .report import lost_note, problems_table
from .terminal import EXIT_FAILED, stderr, stdout

_VALIDATE_HELP = """\
Check a conversation against a provider's rules for tool calls, and repair it.

\b
openai:     every tool result right after the assistant message that called
            it; every call of a closed exchange answered; ids unique.
anthropic:  user first; every tool_result in the user turn right after its
            tool_use; every tool_use of a closed turn answered; ids unique;
            no system message after the start.
responses:  the Responses API's item rules: every function_call_output answers
            an earlier call by call_id; reasoning stays with its calls.
gemini:     functionCall turns right after a user turn; each answered, by id
            or by name and order, in the next user content.

The exit status is 0 when the conversation is valid, 1 when it is not. With
--repair, orphan tool results are dropped, unanswered calls get a placeholder
result, reused call ids are removed (and, for anthropic, a leading assistant
turn gets a user message in front and a later system message becomes user
text); the result is written (in the input's format) to OUT or stdout, and the
status is 0.

\b
Examples:
  mellea-ctx validate run.json --provider openai
  mellea-ctx validate run.anthropic.json --provider anthropic --repair -o fixed.json
"""


@command(
    "validate", _VALIDATE_HELP, "Check tool calls against OpenAI or Anthropic rules; --repair."
)
@click.argument("file", metavar="FILE")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="Whose rules [default: the file's format: openai for Chat Completions files].",
)
@click.option("--repair", is_flag=True, help="Write a repaired conversation.")
@click.option("-o", "--output", metavar="OUT", help="With --repair: where [default: stdout].")
@format_option("The input's format (and so the output's) [default: detected].")
def validate(
    file: str, provider: Provider | None, repair: bool, output: str | None, fmt: str | None
) -> None:
    if output is not None and not repair:
        raise click.UsageError("-o/--output goes with --repair")
    transcript, source = load(file, fmt)
    fmt_ = transcript.format
    chosen: Provider = provider or wire_of(fmt_).name
    found = file_problems(transcript, chosen)
    report = stderr() if repair and to_stdout(output) else stdout()
    unit = unit_of(transcript.format)
    count = len(compare(transcript.raw, transcript.raw, transcript.format).before)
    if not repair:
        report.print(problems_table(source, chosen, located(transcript, found), count, unit=unit))
        if found:
            raise click.exceptions.Exit(EXIT_FAILED)
        return
    repaired, changes = repair_changes(transcript.components, chosen)
    lost: list[str] = []
    data = transcript_document(repaired, transcript.format, transcript.envelope, lost=lost)
    write(data, output)
    diff = compare(transcript.raw, parse_output(data, transcript.format), transcript.format)
    rows = _change_rows(transcript, changes, diff)
    report.print(
        problems_table(
            source,
            chosen,
            rows,
            count,
            repaired=len(diff.after),
            unit=unit,
            unchanged=diff.equal,
        )
    )
    note = lost_note(lost)
    if note is not None:
        report.print(note, soft_wrap=True, highlight=False, markup=False)


def _change_rows(
    transcript: Transcript, changes: list[tuple[int, str]], diff: Changes
) -> list[tuple[str, str]]:
    """What a repair changed, by place; when the writer alone changed something, that."""
    if changes or diff.equal:
        return [(transcript.locations[index], text) for index, text in changes]
    rows = [(diff.label(i), "differs from the input as written") for i, _ in diff.changed]
    return rows + [(diff.label(i), "left out of the output") for i in diff.removed]
