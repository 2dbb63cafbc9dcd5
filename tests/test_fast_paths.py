"""Each fast path gives exactly what the plain path it shortcuts gives (issue 24).

- ``ChatContext.add`` with an inline ``WindowCompactor`` drops the oldest body
  in place on the node it has just built; the plain path builds that node,
  asks :func:`window_cut` for the cut and builds the sibling with ``_replace``.
- ``WindowCompactor.compact`` (any compactor whose ``compact`` is its
  ``inline_cut``) applies the cut itself; the plain path drives its ``steps``.
- ``Message(role, text)`` and ``ModelOutputThunk(text, usage=...)`` set their
  fields directly; the plain path converts and validates them.
- The OpenAI reader reads its two commonest shapes directly; the plain path
  is the general reader, ``_parse_message``.
- ``is_safe_cut(..., loop=...)`` takes the trailing loop a caller has found;
  the plain call scans for it.

Every comparison runs on the contexts and histories ``tests/strategies.py``
builds (rich ones included: thinking loops, typed parts), and covers every
piece of state a node carries, not only what ``as_list`` shows.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import PMap

from mellea_ctx import (
    ChatContext,
    Component,
    Message,
    ModelOutputThunk,
    ToolMessage,
    Usage,
    WindowCompactor,
    to_openai,
)
from mellea_ctx._core import tokens
from mellea_ctx._core.boundaries import is_safe_cut, safe_cut_table, thinking_loop_start, window_cut
from mellea_ctx._core.encoding import load_o200k_base
from mellea_ctx._core.exceptions import InvalidComponentError
from mellea_ctx._core.parts import EMPTY, TextPart, freeze_json, to_extra
from mellea_ctx._core.protocols import CompactCall
from mellea_ctx._formats.openai.read import _parse_message, parse_message

from .helpers import CORPUS
from .strategies import counters, histories, pins, sizes, texts

# shared/ beside the repository, as tests/test_formats.py finds it (or where the suite's
# MELLEA_CTX_CORPUS points).


class Tagged(ChatContext):
    """A subclass with its own attribute, which must ride from node to node."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.model_id = "m-1"


def _plain_add(ctx: ChatContext, component: Component) -> ChatContext:
    """What ``add`` does without its window fast path: two nodes, the generic cut."""
    node = type(ctx).from_previous(ctx, component)
    compactor = ctx._compactor
    assert isinstance(compactor, WindowCompactor)
    p, k = window_cut(node, compactor.size, compactor.pin_predicate, loose=node._loose)
    return node if k <= p else node._replace(p, k)


def _state(ctx: ChatContext) -> tuple[Any, ...]:
    """Everything a node holds that a caller (or a later add) can tell apart."""
    previous = ctx.previous_node
    return (
        type(ctx),
        [id(c) for c in ctx.as_list()],
        [id(c) for c in ctx._head],
        id(ctx._data),
        ctx._linked,
        ctx._usage,
        ctx._loose,
        ctx._hold,
        ctx._failures,
        ctx._tokens,
        ctx._bound,
        ctx._compactor,
        id(ctx._counter),
        ctx._window_size,
        getattr(ctx, "__dict__", None),
        None if previous is None else [id(c) for c in previous.as_list()],
        ctx.is_root_node,
    )


def _loosen(items: list[Component], data: st.DataObject) -> list[Component]:
    """Sometimes move one tool result away from its call: a loose history."""
    results = [i for i, c in enumerate(items) if c.tool_call_id is not None]
    if not results or not data.draw(st.booleans()):
        return items
    moved = items.pop(data.draw(st.sampled_from(results)))
    items.insert(data.draw(st.integers(0, len(items))), moved)
    return items


class TestWindowAdd:
    @settings(max_examples=300)
    @given(data=st.data(), size=sizes, pin=pins, counter=counters, rich=st.booleans())
    def test_same_node_as_the_plain_path_after_every_add(
        self, data: st.DataObject, size: int, pin: Any, counter: Any, rich: bool
    ) -> None:
        items = _loosen(data.draw(histories(rich=rich)), data)
        cls = data.draw(st.sampled_from([ChatContext, Tagged]))
        compactor = WindowCompactor(size=size, pin_predicate=pin)
        fast = plain = cls(compactor=compactor, counter=counter)
        for component in items:
            fast, plain = fast.add(component), _plain_add(plain, component)
            if data.draw(st.booleans()):  # some totals read, some never
                assert fast.token_count == plain.token_count
            assert _state(fast) == _state(plain)
        assert fast.token_count == plain.token_count
        # The next add builds on the in-place node exactly as on the plain one.
        following = Message("user", "next")
        assert _state(fast.add(following)) == _state(_plain_add(plain, following))

    @given(items=histories(rich=True), size=sizes)
    def test_a_branch_from_an_earlier_node_is_not_changed(
        self, items: list[Component], size: int
    ) -> None:
        ctx = ChatContext(compactor=WindowCompactor(size=size))
        seen = []
        for component in items:
            ctx = ctx.add(component)
            seen.append((ctx, [id(c) for c in ctx.as_list()]))
        for node, ids in seen:  # later adds changed no node a caller had
            node.add(Message("user", "branch"))
            assert [id(c) for c in node.as_list()] == ids

    def test_a_subclass_with_its_own_from_previous_gets_the_plain_path(self) -> None:
        made: list[ChatContext] = []

        class Keeping(ChatContext):
            @classmethod
            def from_previous(cls, previous: ChatContext, data: Component) -> ChatContext:
                node = super().from_previous(previous, data)
                made.append(node)  # the node is seen: it must not change afterwards
                return node

        assert not Keeping._builds_fresh and ChatContext._builds_fresh
        ctx: ChatContext = Keeping(compactor=WindowCompactor(size=1))
        for text in ("a", "b", "c"):
            ctx = ctx.add(Message("user", text))
        assert [[c.content for c in node.as_list()] for node in made] == [
            ["a"],
            ["a", "b"],
            ["b", "c"],
        ]
        assert [c.content for c in ctx.as_list()] == ["c"]


_ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool", "bot", "", 3, None])


def _outcome(make: Any) -> Any:
    try:
        return make()
    except Exception as exc:  # both paths must fail alike
        return (type(exc), str(exc))


def _fields(message: object) -> Any:
    if isinstance(message, tuple):
        return message
    assert isinstance(message, Message | ModelOutputThunk)
    values = attrs.astuple(message, recurse=False)
    return (
        values,
        hash(message),
        repr(message),
        [type(part) for part in message.parts],
        [attrs.astuple(part, recurse=False) for part in message.parts],
        type(message.extra),
        hasattr(message, "_token_memo"),
        hasattr(message, "_facts_memo"),
    )


class TestMessage:
    @given(role=_ROLES, text=texts | st.text(max_size=20))
    def test_plain_text_equals_the_converted_path(self, role: Any, text: str) -> None:
        fast = _outcome(lambda: Message(role, text))
        # tool_calls=[] is not the default's identity: the general path runs.
        plain = _outcome(lambda: Message(role, [TextPart(text)], tool_calls=[]))
        assert _fields(fast) == _fields(plain)

    @given(items=histories(rich=True))
    def test_every_plain_message_of_a_history(self, items: list[Component]) -> None:
        for c in items:
            plain = type(c) is Message and not (c.structured or c.tool_calls or c.extra)
            if plain and c.name is None and [type(p) for p in c.parts] == [TextPart]:
                assert _fields(Message(c.role, c.content)) == _fields(c)

    def test_the_fast_path_still_refuses_what_the_plain_path_refuses(self) -> None:
        with pytest.raises(InvalidComponentError, match="ToolMessage"):
            Message("tool", "x")
        with pytest.raises(InvalidComponentError):
            Message("user", b"bytes")  # type: ignore[arg-type]

    def test_a_subclass_runs_its_own_post_init(self) -> None:
        seen: list[str] = []

        @attrs.define(frozen=True, slots=True, init=False, repr=False)
        class Noted(Message):
            def __attrs_post_init__(self) -> None:
                super().__attrs_post_init__()
                seen.append(self.content)

        Noted("user", "hello")
        assert seen == ["hello"]


_USAGES = st.one_of(
    st.none(),
    st.builds(Usage, prompt_tokens=st.integers(0, 10**6), completion_tokens=st.integers(0, 999)),
)


class TestModelOutputThunk:
    @given(value=st.one_of(texts, st.text(max_size=20), st.none(), st.integers()), usage=_USAGES)
    def test_plain_text_equals_the_converted_path(self, value: Any, usage: Usage | None) -> None:
        fast = _outcome(lambda: ModelOutputThunk(value, usage=usage))
        # tool_calls=[] is not the default's identity: the general path runs.
        plain = _outcome(lambda: ModelOutputThunk(value, tool_calls=[], usage=usage))
        assert _fields(fast) == _fields(plain)

    def test_the_fast_path_still_refuses_what_the_plain_path_refuses(self) -> None:
        with pytest.raises(InvalidComponentError, match="usage"):
            ModelOutputThunk("x", usage={"total_tokens": 3})  # type: ignore[arg-type]
        with pytest.raises(InvalidComponentError):
            ModelOutputThunk(b"bytes")  # type: ignore[arg-type]


class TestCompactCut:
    @given(data=st.data(), size=sizes, pin=pins)
    def test_compact_is_what_its_steps_give(self, data: st.DataObject, size: int, pin: Any) -> None:
        items = _loosen(data.draw(histories(rich=True)), data)
        compactor = WindowCompactor(size=size, pin_predicate=pin)
        ctx = ChatContext()
        for component in items:
            ctx = ctx.add(component)
            fast = compactor.compact(ctx)
            plain = compactor.steps(CompactCall(ctx, None, False, None))
            assert (fast is ctx) == (plain is ctx)
            assert _state(fast) == _state(plain)


class TestToExtra:
    @given(value=st.sampled_from([{}, None, EMPTY, {"k": 1}, {"a": {"b": [1]}}]))
    def test_an_empty_dict_is_the_empty_map(self, value: Any) -> None:
        frozen = to_extra(value)
        assert isinstance(frozen, PMap)
        assert frozen == (EMPTY if value is None else freeze_json(dict(value)))


def _read_both(raw: Any) -> tuple[Any, Any]:
    return _outcome(lambda: parse_message(raw, "message 0")), _outcome(
        lambda: _parse_message(raw, "message 0")
    )


def _component_fields(c: Any) -> Any:
    if isinstance(c, tuple):
        return c
    return (type(c), attrs.astuple(c, recurse=False), hash(c), repr(c))


_raw_messages = st.fixed_dictionaries(
    {},
    optional={
        "role": _ROLES,
        "content": st.one_of(
            texts, st.none(), st.just([{"type": "text", "text": "a"}]), st.just(3)
        ),
        "tool_call_id": st.sampled_from(["call_1", "", None, 5]),
        "name": st.sampled_from(["bob", "", None]),
        "audio": st.just({"id": "a1"}),
    },
)


class TestOpenAIRead:
    @given(items=histories(rich=True))
    def test_every_written_message_reads_as_the_general_reader_reads_it(
        self, items: list[Component]
    ) -> None:
        for raw in to_openai(items, lost=[]):
            fast, plain = _read_both(raw)
            assert _component_fields(fast) == _component_fields(plain)

    @given(raw=_raw_messages)
    def test_any_small_message_reads_or_fails_alike(self, raw: dict[str, Any]) -> None:
        fast, plain = _read_both(raw)
        assert _component_fields(fast) == _component_fields(plain)

    @pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not on this machine")
    def test_the_corpus(self) -> None:
        for path in sorted(CORPUS.glob("*.openai.json")):
            for raw in json.loads(path.read_text()):
                fast, plain = _read_both(raw)
                assert _component_fields(fast) == _component_fields(plain)
                if isinstance(fast, ToolMessage):
                    assert not fast.structured


_WIRE_TEXT = st.text(
    alphabet=st.sampled_from(
        ["\n", "[", "]", " ", "\r", "/", "a", "B", "1", "'", "s", "é", "🙂", ".", "\t"]
    ),
    max_size=60,
)


class TestTokenCount:
    @given(text=_WIRE_TEXT, copies=st.integers(1, 400))
    def test_a_long_text_counted_in_pieces_counts_as_one_encode(
        self, text: str, copies: int
    ) -> None:
        """Past ``LONGEST_PIECE`` a text is counted in pieces: the sum is one encode's count."""
        encode = load_o200k_base().encode_ordinary
        long = (text + "\n") * copies
        assert tokens.encoded_length(long) == len(encode(long))

    def test_a_transcript_counted_in_pieces(self) -> None:
        encode = load_o200k_base().encode_ordinary
        text = (
            "\n\n".join(
                f"[{role}] {body}"
                for role, body in [
                    ("user", "List /tmp."),
                    ("assistant", "ok.\n"),
                    ("tool ls", "a\n[b]"),
                ]
            )
            * 2_000
        )
        assert len(text) > tokens.LONGEST_PIECE
        assert tokens.encoded_length(text) == len(encode(text))


class TestSafeCut:
    @given(items=histories(rich=True))
    def test_a_loop_passed_along_answers_as_a_scan(self, items: list[Component]) -> None:
        loop = thinking_loop_start(items)
        for table in (None, safe_cut_table(items)):
            for k in range(len(items) + 1):
                assert is_safe_cut(items, k, table, loop=loop) == is_safe_cut(items, k, table)
