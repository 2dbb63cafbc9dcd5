"""Components: immutable, hashable values that refuse bad input at construction."""

from __future__ import annotations

import attrs
import pytest

from mellea_ctx import (
    CBlock,
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    ReactInitiator,
    ToolCall,
    ToolMessage,
    Usage,
)


class TestMessage:
    def test_fields_and_role(self) -> None:
        """A message keeps what it was given and reports its role."""
        message = Message("user", "hi", images=["data:image/png;base64,AAA"], name="ann")
        assert ("user", "hi", ("data:image/png;base64,AAA",), "ann") == (
            message.role,
            message.content,
            message.images,
            message.name,
        )

    def test_tool_calls_become_a_tuple(self) -> None:
        """A list of tool calls is stored as a tuple, so the message stays immutable."""
        call = ToolCall("c1", "ls", {"path": "."})
        message = Message("assistant", "", tool_calls=[call])
        assert (call,) == message.tool_calls

    def test_frozen(self) -> None:
        """Assigning to a field raises."""
        message = Message("user", "hi")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            message.content = "changed"  # type: ignore[misc]

    def test_equal_values_hash_equal(self) -> None:
        """Two messages with the same fields are equal and hash alike."""
        assert Message("user", "hi") == Message("user", "hi")
        assert hash(Message("user", "hi")) == hash(Message("user", "hi"))

    def test_evolve_returns_a_new_value(self) -> None:
        """attrs.evolve builds a changed copy and leaves the original alone."""
        message = Message("user", "hi")
        changed = attrs.evolve(message, content="bye")
        assert ("hi", "bye") == (message.content, changed.content)

    def test_token_memo_is_invisible(self) -> None:
        """The hidden token memo takes no part in equality, hashing or repr."""
        counted = Message("user", "hi")
        object.__setattr__(counted, "_token_memo", ((object(), 5),))
        fresh = Message("user", "hi")
        assert counted == fresh
        assert hash(counted) == hash(fresh)
        assert repr(counted) == repr(fresh)


class TestOtherComponents:
    def test_tool_message_role(self) -> None:
        """A tool result is sent with role 'tool' and names its call."""
        result = ToolMessage("ok", tool_call_id="c1", name="ls")
        assert ("tool", "c1", "ls") == (result.role, result.tool_call_id, result.name)

    def test_model_output_is_an_assistant_turn(self) -> None:
        """A model output is sent as assistant text, empty when it only called tools."""
        output = ModelOutputThunk(None, tool_calls=[ToolCall("c1", "ls")])
        assert ("assistant", "") == (output.role, output.content)

    def test_usage_total_defaults_to_the_sum(self) -> None:
        """Usage fills total_tokens from prompt and completion tokens."""
        assert 15 == Usage(prompt_tokens=10, completion_tokens=5).total_tokens

    def test_cblock_and_goal_are_user_text(self) -> None:
        """Plain blocks and the agent goal are sent as user text."""
        assert [("user", "x"), ("user", "goal")] == [
            (CBlock("x").role, CBlock("x").content),
            (ReactInitiator("goal").role, ReactInitiator("goal").content),
        ]

    def test_tool_call_serialises_mapping_arguments(self) -> None:
        """A mapping of arguments is stored as the JSON string the wire carries."""
        assert '{"a": 1}' == ToolCall("c1", "f", {"a": 1}).arguments


BAD_COMPONENTS = [
    (lambda: Message("robot", "x"), "Message: role='robot' must be one of"),
    (lambda: Message("tool", "x"), "use ToolMessage(content, tool_call_id=...)"),
    (lambda: Message("user", 3), "Message: content=3 must be a str, None, or a sequence of parts"),  # type: ignore[arg-type]
    (lambda: Message("user", ["x"]), "Message: content=['x'] must hold only parts, got str"),  # type: ignore[list-item]
    (
        lambda: Message("user", "x", tool_calls=[ToolCall("c", "f")]),
        "are only allowed on assistant messages, not role='user'",
    ),
    (
        lambda: Message("assistant", "x", tool_calls=["call"]),  # type: ignore[list-item]
        "must hold only ToolCall values, got str",
    ),
    (lambda: Message("user", "x", images="a.png"), "must be a sequence of str"),  # type: ignore[arg-type]
    (lambda: Message("user", "x", name=""), "Message: name='' must not be empty"),
    (lambda: ToolMessage("x", tool_call_id=""), "ToolMessage: tool_call_id='' must not be empty"),
    (lambda: ToolMessage(b"x", tool_call_id="c"), "ToolMessage: content=b'x' must be a str"),  # type: ignore[arg-type]
    (lambda: ToolCall("", "f"), "ToolCall: id='' must not be empty"),
    (lambda: ToolCall("c", "f", 3), "ToolCall: arguments=3 must be a str"),  # type: ignore[arg-type]
    (lambda: ModelOutputThunk(3), "ModelOutputThunk: value=3 must be a str"),  # type: ignore[arg-type]
    (lambda: ModelOutputThunk("x", usage=5), "ModelOutputThunk: usage=5 must be a Usage"),  # type: ignore[arg-type]
    (lambda: Usage(prompt_tokens=-1, completion_tokens=0), "Usage: prompt_tokens=-1 must be"),
    (lambda: CBlock(["x"]), "CBlock: value=['x'] must be a str"),  # type: ignore[arg-type]
    (lambda: ReactInitiator(""), "ReactInitiator: goal='' must not be empty"),
]


class TestInvalidComponents:
    @pytest.mark.parametrize(("build", "message"), BAD_COMPONENTS)
    def test_bad_values_raise_a_clear_error(self, build: object, message: str) -> None:
        """A bad field raises InvalidComponentError naming the field and its value."""
        with pytest.raises(InvalidComponentError) as info:
            build()  # type: ignore[operator]
        assert message in str(info.value)

    def test_error_is_a_value_error(self) -> None:
        """Callers that only know builtins can catch ValueError."""
        with pytest.raises(ValueError):
            Message("robot", "x")  # type: ignore[arg-type]
