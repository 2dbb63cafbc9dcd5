"""The session store interface, the snapshot it loads, and the checks every store shares.

A store keeps, per session id, the remembered dialogue (a sequence of
components), a version, and a small key/value map of metadata. The version
counts the writes (``append`` and ``replace``) since the session was created
or last cleared; 0 means nothing is stored. Every write names the version it
was based on, and a store applies it only if the session is still at that
version, atomically, so two workers that loaded the same snapshot cannot both
extend it: the second gets :class:`~mellea_ctx.SessionConflictError` and
nothing is written. Metadata is outside this scheme: ``set_meta`` writes one
key, last writer wins, and does not move the version.

Stores keep components as the lossless records of :mod:`mellea_ctx._formats.serialize`,
never in a provider's wire format.

Text a store cannot hold: a lone UTF-16 surrogate (``"\\ud83d"``, half of an
emoji's pair) is a valid Python ``str`` but not Unicode text, and UTF-8 (what
SQLite's ``TEXT`` and Redis's bytes hold) cannot encode it. Such strings come
from a ``"\\ud83d"`` escape in a JSON transcript (which ``load_conversation``
reads as written) or from bytes decoded with ``errors="surrogateescape"``. Every
store, ``MemoryStore`` included, refuses them the same way, before writing
anything: a session id, metadata key or value with
:class:`~mellea_ctx.InvalidArgumentError`, a component with
:class:`~mellea_ctx.InvalidComponentError` naming its index and field. Why
here and not earlier: a component is an in-memory value and the JSON readers
and writers are lossless (the transcript writes back with the same escape),
so neither can call the text wrong; the store is the first boundary that must
turn it into UTF-8, and the first that can say which component and field
cannot be kept. A NUL character (``"\\x00"``) in a session id, metadata key or
value is refused the same way, because PostgreSQL's ``text`` cannot hold one;
inside a component it is fine (a record is JSON, which writes it ``\\u0000``).
Refusing in ``MemoryStore`` too keeps the stores interchangeable: a test on
memory fails where production on SQLite would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, Protocol, runtime_checkable

import attrs

from .._core.checks import argument_error, require_int
from .._core.components import Component
from .._core.exceptions import InvalidArgumentError, InvalidComponentError
from .._formats.serialize import component_from_record, component_to_record

#: The longest session id (and metadata key) a store accepts, in characters.
MAX_SESSION_ID_LENGTH: Final = 200


def _components(value: Iterable[Component]) -> tuple[Component, ...]:
    return tuple(value)


def _meta(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


@attrs.define(frozen=True, slots=True)
class StoredSession:
    """What a store holds for one session, read in one consistent snapshot.

    Attributes:
        version: How many writes the session has seen; 0 for a session with
            nothing stored (new, or cleared).
        components: The remembered dialogue, oldest first.
        meta: The session's metadata, read-only.

    Examples:
        >>> from mellea_ctx import Message
        >>> stored = StoredSession(1, (Message("user", "hi"),), {"tools": "search"})
        >>> stored.version, len(stored.components), stored.meta["tools"]
        (1, 1, 'search')
    """

    version: int = 0
    components: tuple[Component, ...] = attrs.field(default=(), converter=_components)
    meta: Mapping[str, str] = attrs.field(factory=dict, converter=_meta, hash=False)


@runtime_checkable
class SessionStore(Protocol):
    """Where :class:`~mellea_ctx.SessionMemory` keeps sessions.

    Each write is atomic: it is applied whole, or not at all. ``append`` and
    ``replace`` are applied only when the session is still at
    ``expected_version``; otherwise they raise
    :class:`~mellea_ctx.SessionConflictError` and write nothing. Every method
    refuses a bad session id (not a str, empty, or longer than 200
    characters) with :class:`~mellea_ctx.InvalidArgumentError`.
    ``MemoryStore``, ``SQLiteStore`` and ``RedisStore`` implement it.
    """

    def load(self, session_id: str) -> StoredSession:
        """Return the session's version, dialogue and metadata, read together."""
        ...

    def append(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Append ``components`` (at least one) and return the new version."""
        ...

    def replace(
        self, session_id: str, components: Iterable[Component], *, expected_version: int
    ) -> int:
        """Replace the whole dialogue with ``components`` and return the new version."""
        ...

    def set_meta(self, session_id: str, key: str, value: str | None) -> None:
        """Set one metadata key (``None`` deletes it); the version does not move."""
        ...

    def clear(self, session_id: str) -> None:
        """Forget the session: dialogue, version and metadata; other sessions are untouched."""
        ...


# -- checks every store makes, with the same messages ------------------------------


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}..."


def check_session_id(owner: str, session_id: object) -> str:
    """Return ``session_id`` if it is a usable session id.

    Raises:
        InvalidArgumentError: When it is not a str, is empty, or is longer
            than :data:`MAX_SESSION_ID_LENGTH` characters.
    """
    if not isinstance(session_id, str):
        expected = f"must be a str, got {type(session_id).__name__}"
        raise argument_error(owner, "session_id", session_id, expected, "pass str(...) of your id")
    if not session_id:
        fix = "pass the conversation's id"
        raise argument_error(owner, "session_id", session_id, "must not be empty", fix)
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        msg = (
            f"{owner}: session_id={_shown(session_id)} is {len(session_id)} characters, "
            f"more than {MAX_SESSION_ID_LENGTH}; pass a shorter id, such as a hash of this one"
        )
        raise InvalidArgumentError(msg)
    _check_text(owner, "session_id", session_id)
    return session_id


def check_version(owner: str, expected_version: object) -> int:
    """Return ``expected_version`` if it is an int >= 0.

    Raises:
        InvalidArgumentError: Otherwise.
    """
    fix = "pass the version of the snapshot this write is based on (0 for a new session)"
    return require_int(owner, "expected_version", expected_version, fix=fix)


def check_components(
    owner: str, components: object, *, allow_empty: bool = True
) -> tuple[Component, ...]:
    """Return ``components`` as a tuple after checking each one is a :class:`Component`.

    Raises:
        InvalidArgumentError: When ``components`` is not an iterable of
            components, or is empty and ``allow_empty`` is false.
        InvalidComponentError: When an item is not a :class:`Component`.
    """
    if isinstance(components, (str, bytes, Mapping, Component)) or not isinstance(
        components, Iterable
    ):
        expected = "must be a sequence of components"
        fix = "wrap a single component in a tuple"
        raise argument_error(owner, "components", components, expected, fix)
    items = tuple(components)
    for index, item in enumerate(items):
        if not isinstance(item, Component):
            fix = "wrap text as Message('user', text)"
            name = f"components[{index}]"
            raise argument_error(
                owner, name, item, "is not a Component", fix, error=InvalidComponentError
            )
    if not items and not allow_empty:
        msg = f"{owner}: components=() is empty; pass at least one component to append"
        raise InvalidArgumentError(msg)
    return items


def check_meta(owner: str, key: object, value: object) -> tuple[str, str | None]:
    """Return ``(key, value)`` if the key is a short non-empty str and the value a str or None.

    Raises:
        InvalidArgumentError: Otherwise.
    """
    if not isinstance(key, str) or not key or len(key) > MAX_SESSION_ID_LENGTH:
        expected = f"must be a non-empty str of at most {MAX_SESSION_ID_LENGTH} characters"
        raise argument_error(owner, "key", key, expected, "name the metadata, e.g. 'tool_search'")
    if value is not None and not isinstance(value, str):
        expected = f"must be a str, or None to delete {key!r}"
        fix = "serialise structured data with json.dumps()"
        raise argument_error(owner, "value", value, expected, fix)
    _check_text(owner, "key", key)
    if value is not None:
        _check_text(owner, "value", value)
    return key, value


@attrs.define(frozen=True, slots=True)
class Write:
    """An ``append`` or ``replace``, its arguments checked: what a store's write is handed."""

    owner: str  # "RedisStore.append": what the errors name
    session_id: str
    items: tuple[Component, ...]
    expected_version: int
    append: bool

    @property
    def operation(self) -> str:
        """``"append"`` or ``"replace"``."""
        return "append" if self.append else "replace"

    @classmethod
    def checked(
        cls, kind: str, operation: str, session_id: object, components: object, expected: object
    ) -> Write:
        """Check an ``append`` (at least one component) or ``replace`` of ``kind``'s store.

        Raises:
            InvalidArgumentError: As :func:`check_session_id`, :func:`check_version`
                and :func:`check_components` do.
            InvalidComponentError: As :func:`check_components` does.
        """
        owner = f"{kind}.{operation}"
        append = operation == "append"
        checked_id = check_session_id(owner, session_id)
        version = check_version(owner, expected)
        items = check_components(owner, components, allow_empty=not append)
        return cls(owner, checked_id, items, version, append)


def _surrogate_at(text: str) -> int | None:
    """Return the index of the first lone surrogate in ``text``, or ``None``."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _surrogate_advice(text: str, at: int) -> str:
    char = text[at]
    return (
        f"holds a lone surrogate {char!r} (U+{ord(char):04X}) at character {at}, which UTF-8 "
        "cannot store (often a JSON '\\ud83d'-style escape of half an emoji); the store was "
        "not touched: fix the text, e.g. text.encode('utf-8', 'replace').decode()"
    )


def _check_text(owner: str, name: str, text: str) -> None:
    at = _surrogate_at(text)
    if at is not None:
        msg = f"{owner}: {name}={_shown(text)} {_surrogate_advice(text, at)}"
        raise InvalidArgumentError(msg)
    at = text.find("\x00")
    if at >= 0:
        msg = (
            f"{owner}: {name}={_shown(text)} holds a NUL character ('\\x00') at character "
            f"{at}, which PostgreSQL's text cannot store (so no store takes it); the store "
            "was not touched: remove it, e.g. text.replace('\\x00', '')"
        )
        raise InvalidArgumentError(msg)


def dump_records(owner: str, components: Iterable[Component]) -> list[str]:
    """Return each component's :func:`dump_record` text, checked to be storable as UTF-8.

    Raises:
        InvalidComponentError: When a component holds a lone surrogate; the
            message names its index and the record field.
    """
    records = []
    for index, component in enumerate(components):
        text = dump_record(component)
        at = _surrogate_at(text)
        if at is not None:
            field, value = _surrogate_field(component_to_record(component))
            msg = (
                f"{owner}: components[{index}] ({type(component).__name__}) field {field} "
                f"{_surrogate_advice(value, _surrogate_at(value) or 0)}"
            )
            raise InvalidComponentError(msg)
        records.append(text)
    return records


def _surrogate_field(record: object) -> tuple[str, str]:
    """Return the path and value of a string in ``record`` that holds a lone surrogate.

    A walk with an explicit stack: a record nests as deep as its checkpoints.
    """
    stack: list[tuple[str, object]] = [("record", record)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _surrogate_at(value) is not None:
                return path, value
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _surrogate_at(key) is not None:
                    return f"{path} key", key
                stack.append((f"{path}[{key!r}]", item))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return "record", ""  # not reached: the dumped text held one


def dump_record(component: Component) -> str:
    """Return ``component``'s lossless record as compact JSON text."""
    return json.dumps(component_to_record(component), ensure_ascii=False, separators=(",", ":"))


def load_record(text: str | bytes) -> Component:
    """Return the component a :func:`dump_record` text describes.

    Raises:
        InvalidComponentError: When the text is not such a record.
    """
    return component_from_record(stored_object(text, "stored component"))


def stored_object(text: str | bytes, what: str) -> dict[str, Any]:
    """Return the JSON object ``text`` holds; an error names it as ``what`` (``"stored record"``).

    Raises:
        InvalidComponentError: When the text is not valid JSON or not an object.
    """
    try:
        record = json.loads(text)
    except ValueError as exc:
        msg = f"{what} {text[:80]!r} is not valid JSON ({exc})"
        raise InvalidComponentError(msg) from exc
    if not isinstance(record, dict):
        msg = f"{what} {text[:80]!r} is not a JSON object"
        raise InvalidComponentError(msg)
    return record
