"""Tools: plain Python functions the model may call, with schemas derived for each provider.

``tool(fn)`` reads the function's signature, type hints and docstring (a
summary line and a Google-style ``Args:`` section) and builds a frozen
:class:`Tool` with a JSON schema for its arguments. ``Tool.to_openai()`` and
``Tool.to_anthropic()`` give each provider's definition; ``Tool.ainvoke``
runs the function on the model's JSON arguments, sync or async.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, overload

import attrs

from .checks import flag_validator
from .exceptions import InvalidArgumentError

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]+:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolArgumentError(InvalidArgumentError):
    """The model called a tool with arguments that do not fit its schema."""


#: The JSON schema types of the scalar hints.
_SCALARS: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _json_type(hint: Any) -> dict[str, Any]:
    """Return the JSON schema for one type hint."""
    if hint is inspect.Parameter.empty or hint is Any:
        return {}
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return _union(hint)
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if isinstance(hint, type):
        named = _class_type(hint)
        if named is not None:
            return named
    return _collection_type(hint, origin)


def _class_type(hint: type) -> dict[str, Any] | None:
    """An enum's values or a scalar's type; ``None`` for any other class."""
    if issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    return None


def _collection_type(hint: Any, origin: Any) -> dict[str, Any]:
    """An array or an object, by the hint or its origin; ``{}`` (anything) otherwise."""
    if origin in (list, tuple, set, frozenset, Sequence) or hint in (list, tuple, set):
        return _array(hint)
    if origin in (dict, Mapping) or hint is dict:
        return {"type": "object"}
    return {}


def _union(hint: Any) -> dict[str, Any]:
    """``X | None`` is ``X``'s schema (the argument is optional); more members, ``anyOf``."""
    members = [arg for arg in get_args(hint) if arg is not type(None)]
    if len(members) == 1:
        return _json_type(members[0])
    return {"anyOf": [_json_type(member) for member in members]}


def _array(hint: Any) -> dict[str, Any]:
    """An array, with its items' schema when the hint names one."""
    args = get_args(hint)
    items = _json_type(args[0]) if args and args[0] is not Ellipsis else {}
    return {"type": "array", "items": items} if items else {"type": "array"}


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Return the summary paragraph and the per-argument descriptions of ``fn``."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line) or _SECTION.match(line):
            break
        summary.append(line.strip())
    return " ".join(summary), _argument_descriptions(_args_section(lines))


def _args_section(lines: list[str]) -> Iterator[str]:
    """The non-blank lines under an ``Args:`` header, up to the next section's header."""
    inside = False
    for line in lines:
        if _ARGS_HEADER.match(line):
            inside = True
            continue
        if inside and _SECTION.match(line):
            return
        if inside and line.strip():
            yield line


def _argument_descriptions(section: Iterable[str]) -> dict[str, str]:
    """Each argument's description: its ``name: text`` line and the lines indented under it."""
    arguments: dict[str, str] = {}
    current: str | None = None
    for line in section:
        match = _ARG_LINE.match(line)
        if match and len(line) - len(line.lstrip()) <= 4:
            current = match.group(1).lstrip("*")
            arguments[current] = match.group(3).strip()
        elif current is not None:
            arguments[current] = f"{arguments[current]} {line.strip()}".strip()
    return arguments


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """Return the JSON schema of ``fn``'s arguments, from its signature and docstring.

    Examples:
        >>> def read_file(path: str, limit: int = 100) -> str:
        ...     '''Read a text file.
        ...
        ...     Args:
        ...         path: The file to read.
        ...         limit: How many lines at most.
        ...     '''
        ...     return ""
        >>> tool_schema(read_file)["required"], tool_schema(read_file)["properties"]["limit"]
        (['path'], {'type': 'integer', 'description': 'How many lines at most.', 'default': 100})
    """
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):
        hints = {}
    _, described = _docstring(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        schema = _json_type(hints.get(name, parameter.annotation))
        if name in described:
            schema["description"] = described[name]
        if parameter.default is not parameter.empty:
            try:
                json.dumps(parameter.default)
                schema["default"] = parameter.default
            except TypeError:
                pass
        else:
            required.append(name)
        properties[name] = schema
    return {"type": "object", "properties": properties, "required": required}


def _render_result(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@attrs.define(frozen=True, slots=True)
class Tool:
    """A function the model may call.

    Build one with :func:`tool`. ``parameters`` is the JSON schema of its
    arguments; ``deferred`` tools stay out of requests until found through
    tool search.

    Attributes:
        name: The name the model calls it by.
        description: What it does, for the model.
        schema_json: The JSON schema of its arguments, as JSON text (frozen).
        function: The Python function it runs.
        deferred: Kept out of requests until a search finds it.
    """

    name: str
    description: str
    schema_json: str
    function: Callable[..., Any] = attrs.field(eq=False, repr=False)
    deferred: bool = attrs.field(
        default=False, validator=flag_validator("Tool", error=InvalidArgumentError)
    )

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a fresh dict on each read)."""
        value: dict[str, Any] = json.loads(self.schema_json)
        return value

    def to_openai(self) -> dict[str, Any]:
        """Return the Chat Completions definition (``{"type": "function", ...}``)."""
        function = {"name": self.name, "description": self.description}
        return {"type": "function", "function": {**function, "parameters": self.parameters}}

    def to_anthropic(self) -> dict[str, Any]:
        """Return the Messages API definition (``name``, ``description``, ``input_schema``)."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """Return the model's JSON arguments as keyword arguments, checked against the schema.

        Raises:
            ToolArgumentError: For invalid JSON, a non-object, a missing
                required argument or an unknown one.
        """
        value = self._json_object(arguments)
        schema = self.parameters
        known = set(schema.get("properties", {}))
        missing = [name for name in schema.get("required", []) if name not in value]
        unknown = sorted(set(value) - known)
        accepts_more = any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(self.function).parameters.values()
        )
        problems = _name_problems(missing, [] if accepts_more else unknown)
        if problems:
            msg = (
                f"tool {self.name}: {'; '.join(problems)}; it takes "
                f"{', '.join(sorted(known)) or 'no arguments'}"
            )
            raise ToolArgumentError(msg)
        return value

    def _json_object(self, arguments: str) -> dict[str, Any]:
        """The model's arguments decoded: a JSON object (none given: an empty one)."""
        try:
            value = json.loads(arguments or "{}")
        except ValueError as exc:
            msg = f"tool {self.name}: arguments {arguments[:200]!r} are not valid JSON ({exc})"
            raise ToolArgumentError(msg) from exc
        if not isinstance(value, dict):
            msg = f"tool {self.name}: arguments must be a JSON object, got {arguments[:200]!r}"
            raise ToolArgumentError(msg)
        return value

    async def ainvoke(self, arguments: str) -> str:
        """Run the tool on the model's JSON arguments and return its result as text.

        Raises:
            ToolArgumentError: When the arguments do not fit the schema.
            Exception: Whatever the function raises.
        """
        kwargs = self.parse_arguments(arguments)
        result = self.function(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return _render_result(result)


def _name_problems(missing: list[str], unknown: list[str]) -> list[str]:
    """What is wrong with the arguments' names ([] when nothing is)."""
    problems = []
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown {', '.join(unknown)}")
    return problems


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, deferred: bool = False
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    deferred: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a function: ``tool(fn)``, ``@tool`` or ``@tool(deferred=True)``.

    The name defaults to the function's, the description to its docstring's
    summary; argument types and descriptions come from its type hints and its
    ``Args:`` section.

    Raises:
        InvalidArgumentError: For a name providers would reject, or no description.

    Examples:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add.name, add.to_openai()["function"]["parameters"]["required"]
        ('add', ['a', 'b'])
    """

    def build(function: Callable[..., Any]) -> Tool:
        if not callable(function):
            msg = f"tool: {function!r} is not callable; pass a function"
            raise InvalidArgumentError(msg)
        tool_name: str = name or str(getattr(function, "__name__", ""))
        if not _NAME.match(tool_name):
            msg = (
                f"tool: name={tool_name!r} must be 1-64 letters, digits, '_' or '-' "
                "(what OpenAI and Anthropic accept); pass name=..."
            )
            raise InvalidArgumentError(msg)
        summary, _ = _docstring(function)
        text = description or summary
        if not text:
            msg = (
                f"tool {tool_name}: no description; give the function a docstring or pass "
                "description=... (the model chooses tools by it)"
            )
            raise InvalidArgumentError(msg)
        schema = json.dumps(tool_schema(function), sort_keys=True)
        return Tool(tool_name, text, schema, function, deferred)

    if fn is not None:
        return build(fn)
    return build
