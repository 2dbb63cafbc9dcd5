"""``BaseBackend``: every built-in backend checks ``generate``'s arguments in one place."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import (
    AnthropicBackend,
    Backend,
    BackendError,
    BaseBackend,
    Component,
    ExtractiveBackend,
    InvalidArgumentError,
    InvalidComponentError,
    Message,
    ModelOutputThunk,
    OpenAIBackend,
    OpenAIResponsesBackend,
    ScriptedBackend,
    Tool,
    tool,
)

#: A port nothing listens on: a request that got out would fail as a connection error.
_NOWHERE = "http://127.0.0.1:9/v1"


def _langchain() -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from mellea_ctx.integrations.langchain import ChatModelBackend

    return ChatModelBackend(GenericFakeChatModel(messages=iter([AIMessage("Hi.")])))


def _pydantic_ai() -> Any:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.test import TestModel

    from mellea_ctx.integrations.pydantic_ai import ModelBackend

    return ModelBackend(TestModel(custom_output_text="Short."))


def _openai_agents() -> Any:
    pytest.importorskip("agents")
    from mellea_ctx.integrations.openai_agents import ModelBackend

    class Model:
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the model was called")

    return ModelBackend(Model())


#: Every built-in backend, each built the way a user builds it.
BACKENDS: dict[str, Callable[[], Any]] = {
    "ExtractiveBackend": ExtractiveBackend,
    "ScriptedBackend": lambda: ScriptedBackend(lambda messages, options: "ok"),
    "OpenAIBackend": lambda: OpenAIBackend("m", base_url=_NOWHERE, api_key="x"),
    "OpenAIResponsesBackend": lambda: OpenAIResponsesBackend("m", base_url=_NOWHERE, api_key="x"),
    "AnthropicBackend": lambda: AnthropicBackend("claude-x", base_url=_NOWHERE, api_key="x"),
    "ChatModelBackend": _langchain,
    "pydantic_ai.ModelBackend": _pydantic_ai,
    "openai_agents.ModelBackend": _openai_agents,
}

_not_components = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.none(),
    st.binary(max_size=8),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    st.builds(object),
    st.just(Message),  # the class, not an instance
)


async def _never(self: Any, *args: Any) -> ModelOutputThunk:
    raise AssertionError("answer() was reached: the arguments were not checked first")


def _refused(backend: Any, error: type[Exception], **arguments: Any) -> Exception:
    """The error ``backend.generate(**arguments)`` raises, its ``answer`` (all I/O) never run."""
    with mock.patch.object(type(backend), "answer", _never), pytest.raises(error) as info:
        asyncio.run(backend.generate(**arguments))
    assert not isinstance(info.value, BackendError)
    return info.value


@pytest.mark.parametrize("name", list(BACKENDS))
class TestEveryBuiltInBackend:
    def test_is_a_base_backend(self, name: str) -> None:
        """Each one inherits the one ``generate`` and satisfies the ``Backend`` protocol."""
        backend = BACKENDS[name]()
        assert isinstance(backend, BaseBackend) and isinstance(backend, Backend)
        assert BaseBackend.generate is type(backend).generate

    @given(
        before=st.integers(min_value=0, max_value=3),
        after=st.integers(min_value=0, max_value=2),
        item=_not_components,
    )
    def test_refuses_a_message_that_is_not_a_component(
        self, name: str, before: int, after: int, item: object
    ) -> None:
        """A non-Component anywhere in ``messages``: InvalidComponentError, nothing sent."""
        backend = BACKENDS[name]()
        messages = [Message("user", "hi")] * before + [item] + [Message("user", "go")] * after
        error = _refused(backend, InvalidComponentError, messages=messages)
        head = f"{type(backend).__name__}.generate: messages[{before}]="
        assert str(error).startswith(head)
        assert "is not a Component; build it with Message(...)" in str(error)

    @given(messages=st.one_of(st.text(max_size=10), st.integers(), st.none()))
    def test_refuses_messages_that_are_not_a_sequence(self, name: str, messages: object) -> None:
        """Text, a number or None for ``messages``: InvalidArgumentError, nothing sent."""
        error = _refused(BACKENDS[name](), InvalidArgumentError, messages=messages)
        assert "messages=" in str(error) and "must be a sequence" in str(error)

    @given(options=st.one_of(st.text(max_size=10), st.integers(), st.lists(st.integers())))
    def test_refuses_options_that_are_not_a_mapping(self, name: str, options: object) -> None:
        """``model_options`` that is not a mapping or None: InvalidArgumentError, nothing sent."""
        arguments = {"messages": [Message("user", "hi")], "model_options": options}
        error = _refused(BACKENDS[name](), InvalidArgumentError, **arguments)
        assert "model_options=" in str(error) and "must be a Mapping" in str(error)

    @given(item=_not_components)
    def test_refuses_a_tool_that_is_not_a_tool(self, name: str, item: object) -> None:
        """A tool that is not a ``Tool`` (an OpenAI dict, say): InvalidArgumentError naming it."""
        arguments = {"messages": [Message("user", "hi")], "tools": [_a_tool(), item]}
        error = _refused(BACKENDS[name](), InvalidArgumentError, **arguments)
        assert "tools[1]=" in str(error) and "must be a Tool" in str(error)


def _a_tool() -> Tool:
    def weather(city: str) -> str:
        """The weather in a city."""
        return city

    return tool(weather)


class Recorder(BaseBackend):
    """A backend of a user's own: it keeps what ``answer`` was given."""

    def __init__(self) -> None:
        self.given: list[tuple[Any, ...]] = []

    async def answer(
        self, messages: tuple[Component, ...], options: dict[str, Any], tools: tuple[Tool, ...]
    ) -> ModelOutputThunk:
        self.given.append((messages, options, tools))
        options["seen"] = True  # its own dict: the caller's mapping is not touched
        return ModelOutputThunk("ok")


class TestBaseBackend:
    def test_answer_gets_normalised_arguments(self) -> None:
        """A list, a mapping and tools reach ``answer`` as a tuple, a new dict and a tuple."""
        backend, hi, weather = Recorder(), Message("user", "hi"), _a_tool()
        options = {"max_tokens": 5}
        asyncio.run(backend.generate([hi], model_options=options, tools=[weather]))
        asyncio.run(backend.generate(iter([hi])))
        assert [
            ((hi,), {"max_tokens": 5, "seen": True}, (weather,)),
            ((hi,), {"seen": True}, ()),
        ] == (backend.given)
        assert {"max_tokens": 5} == options

    def test_answer_is_required(self) -> None:
        """A subclass without ``answer`` cannot be built."""

        class Incomplete(BaseBackend):
            pass

        with pytest.raises(TypeError, match="answer"):
            Incomplete()  # type: ignore[abstract]

    def test_a_plain_class_still_satisfies_the_protocol(self) -> None:
        """``Backend`` stays the contract: any class with ``generate`` is a backend."""

        class Plain:
            async def generate(self, messages: Any, **kwargs: Any) -> ModelOutputThunk:
                return ModelOutputThunk("plain")

        assert isinstance(Plain(), Backend) and not isinstance(Plain(), BaseBackend)

    def test_the_extractive_backend_keeps_its_slots(self) -> None:
        """An attrs slotted class on the base: no instance ``__dict__``, still frozen."""
        backend = ExtractiveBackend()
        assert not hasattr(backend, "__dict__")
        with pytest.raises(AttributeError):
            backend.ratio = 0.5  # type: ignore[misc]

    def test_scripted_records_what_it_recorded_before(self) -> None:
        """``calls`` holds the messages as a tuple and the options with the tools as a list."""
        backend, hi, weather = ScriptedBackend(lambda m, o: "ok"), Message("user", "hi"), _a_tool()
        asyncio.run(backend.generate([hi], model_options={"a": 1}, tools=[weather]))
        asyncio.run(backend.generate([hi]))
        assert [((hi,), {"a": 1, "tools": [weather]}), ((hi,), {})] == backend.calls
