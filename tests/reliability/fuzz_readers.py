"""Coverage-guided fuzzing of the transcript readers with atheris (``nox -s fuzz``).

Each input is a selector byte and a payload (which the selector's high bit
expands by repeating a short unit, for deep nesting and long numbers). The
payload is read as a transcript file (``load_conversation`` under a ``.json``,
``.jsonl`` or other name, ``load_anthropic``, and the command line's
any-format reader: the bytes go to disk as they are), as parsed turns handed
to ``from_openai`` or ``from_anthropic``, or as the JSON records the session
stores keep. Every reader must return components or raise one
:class:`~mellea_ctx.MelleaCtxError`; components that read must write back and
read again to the same values. Anything else is a crash, which libFuzzer
reports with the input that caused it.

Run::

    python tests/reliability/fuzz_readers.py -runs=200000 [-seed=1] [corpus_dir ...]

Without a corpus directory, a temporary one is seeded with a few valid
transcripts. libFuzzer prints ``Done N runs in S second(s)`` at the end.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

# Imported by main(), under atheris' instrumentation; importing this module does nothing
# (pytest's --doctest-modules imports it, with or without atheris installed).
api: Any = ModuleType("unset")
records: Any = ModuleType("unset")
formats: Any = ModuleType("unset")
_FOLDER = Path()
_SUFFIXES = (".json", ".jsonl", ".txt")

SEEDS = [
    b"\x80\x00\x0a[",  # amplified: 240 nested arrays
    b'\x83\x00\x10{"role": "user", "content": "x"}\n',  # amplified JSONL
    b'\x00[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]',
    b'\x01{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", '
    b'"image_url": {"url": "https://x/y.png"}}]}\n{"role": "assistant", "content": null, '
    b'"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", '
    b'"arguments": "{}"}}]}\n{"role": "tool", "tool_call_id": "c1", "content": "a.py"}\n',
    b'\x03[{"role": "user", "content": "x", "name": "ana"}, {"role": "tool", '
    b'"tool_call_id": "c9", "content": NaN}]',
    b'\x04[{"kind": "checkpoint", "summary": "s", "preserved": ["a.py"], "replaced_count": 2, '
    b'"span": [{"kind": "message", "role": "user", "content": "hi"}, {"kind": "output", '
    b'"value": null, "tool_calls": [{"id": "c", "name": "f", "arguments": "{}"}], '
    b'"usage": [1, 2, 3]}]}, {"kind": "goal", "goal": "g"}, {"kind": "cblock", "value": "v"}]',
]


def _file(payload: bytes, suffix: str) -> None:
    path = _FOLDER / f"t{suffix}"
    path.write_bytes(payload)
    try:
        components = api.load_conversation(path)
    except api.MelleaCtxError:
        return
    api.validate_openai(components)
    api.dump_conversation(components, path)
    once = api.load_conversation(path)
    # docs/formats.md's normalizations (an assistant's content: null without tool calls is
    # written as "") apply on the first write; past them, writing is a fixed point.
    api.dump_conversation(once, path)
    assert once == api.load_conversation(path), "a transcript changed on its round trip"


def _messages(payload: bytes) -> None:
    try:
        messages = json.loads(payload)
    except (ValueError, RecursionError):
        return  # not JSON: the file readers cover that
    if not isinstance(messages, list):
        return
    try:
        components = api.from_openai(messages)
    except api.MelleaCtxError:
        return
    api.validate_openai(components)
    lost: list[str] = []  # other providers' keys (cache_control...) are not written back
    again = api.from_openai(api.to_openai(components, lost=lost))
    assert lost or components == again, "from_openai is not a fixed point"


def _anthropic_file(payload: bytes) -> None:
    path = _FOLDER / "a.json"
    path.write_bytes(payload)
    try:
        api.load_anthropic(path)
    except api.MelleaCtxError:
        return


def _any_file(payload: bytes) -> None:
    """The command line's reader: any format, detected from the name and the text."""
    path = _FOLDER / "any.json"
    path.write_bytes(payload)
    try:
        formats.read_any(path)
    except api.MelleaCtxError:
        return


def _anthropic_turns(payload: bytes) -> None:
    try:
        turns = json.loads(payload)
    except (ValueError, RecursionError):
        return
    try:
        components = api.from_anthropic(turns)
    except api.MelleaCtxError:
        return
    system, again = api.to_anthropic(components, lost=[])
    api.from_anthropic(again, system=system)


def _records(payload: bytes) -> None:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        components = records.components_from_json(text)
    except api.MelleaCtxError:
        return
    assert components == records.components_from_json(records.components_to_json(components))


def _amplify(payload: bytes) -> bytes:
    """Repeat a short unit up to 6,120 times: deep nesting and long numbers, which byte
    mutations alone almost never build, are a few mutations away."""
    if len(payload) < 3:
        return payload
    size, times = payload[0] % 8 + 1, payload[1] * 24
    unit, rest = payload[2 : 2 + size], payload[2 + size :]
    return unit * times + rest


def test_one_input(data: bytes) -> None:
    """Read one fuzzer input with the reader its first byte selects.

    The low bits of the first byte choose the reader; its high bit first expands the
    payload with :func:`_amplify`.
    """
    if not data:
        return
    selector, payload = data[0] & 0x7F, data[1:]
    if data[0] & 0x80:
        payload = _amplify(payload)
    selector %= 8
    if selector < 3:
        _file(payload, _SUFFIXES[selector])
    elif selector == 3:
        _messages(payload)
    elif selector == 4:
        _records(payload)
    elif selector == 5:
        _anthropic_file(payload)
    elif selector == 6:
        _anthropic_turns(payload)
    else:
        _any_file(payload)


def main(argv: list[str]) -> None:
    """Instrument mellea_ctx, seed a corpus if none is given, and fuzz."""
    global api, records, formats, _FOLDER  # set once, before the first input
    import atheris

    with atheris.instrument_imports(include=["mellea_ctx"]):
        import mellea_ctx as api_module
        import mellea_ctx._formats.serialize as records_module
        import mellea_ctx._formats.transcripts as formats_module
    api, records, formats = api_module, records_module, formats_module
    _FOLDER = Path(tempfile.mkdtemp(prefix="fuzz_readers_"))
    if not any(not arg.startswith("-") for arg in argv[1:]):
        corpus = Path(tempfile.mkdtemp(prefix="fuzz_readers_corpus_"))
        for index, seed in enumerate(SEEDS):
            (corpus / f"seed{index}").write_bytes(seed)
        argv = [*argv, str(corpus)]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
