"""Session stores at their edges: text UTF-8 cannot hold, and files that are not databases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mellea_ctx import (
    Checkpoint,
    InvalidArgumentError,
    InvalidComponentError,
    Message,
    SessionStore,
    SessionStoreError,
    SQLiteStore,
    load_conversation,
)

from ._postgres import postgres_server_fixture  # noqa: F401 (a fixture)
from ._redis import redis_server_fixture  # noqa: F401 (a fixture)
from ._stores import StoreFactory, store_factory_fixture, store_fixture  # noqa: F401 (fixtures)


def half_emoji(tmp_path: Path) -> list[Message]:
    """What load_conversation makes of a transcript with a lone '\\ud83d' escape."""
    path = tmp_path / "half.json"
    path.write_text('[{"role": "user", "content": "done \\ud83d"}]', encoding="ascii")
    components = load_conversation(path)
    assert "done \ud83d" == components[0].content
    return components  # type: ignore[return-value]


def _owner(store: SessionStore) -> str:
    """The class a store's errors name: an async store seen through the tests' sync face
    names itself (or, behind an adapter, the sync store it runs)."""
    astore = getattr(store, "astore", None)
    if astore is None:
        return type(store).__name__
    inner = getattr(astore, "store", None) or getattr(astore, "_store", None)
    names = {type(astore).__name__, type(inner).__name__ if inner is not None else ""}
    names |= {base.__name__ for base in type(astore).__mro__[1:2]}
    return "(?:" + "|".join(sorted(n for n in names if n and n != "object")) + ")"


class TestLoneSurrogates:
    def test_a_component_is_refused_the_same_way_everywhere(
        self, store: SessionStore, tmp_path: Path
    ) -> None:
        """Every store refuses a lone surrogate with the same clear error and writes nothing."""
        components = half_emoji(tmp_path)
        owner = _owner(store)
        expected = (
            rf"{owner}\.a?append: components\[0\] \(Message\) field record\['content'\] holds a "
            r"lone surrogate '\\ud83d' \(U\+D83D\) at character 5"
        )
        with pytest.raises(InvalidComponentError, match=expected):
            store.append("s", components, expected_version=0)
        with pytest.raises(InvalidComponentError, match=rf"{owner}\.a?replace: components\[0\]"):
            store.replace("s", components, expected_version=0)
        assert 0 == store.load("s").version

    def test_one_inside_a_checkpoint_span_is_found(self, store: SessionStore) -> None:
        """The error names the nested field, even deep in a checkpoint's span."""
        inner = Checkpoint("older", span=[Message("user", "ok \udc80")], replaced_count=1)
        outer = Checkpoint("newer", span=[inner], replaced_count=1)
        field = r"field record\['checkpoints'\]\[0\]\['span'\]\[0\]\['content'\]"
        expected = rf"components\[1\] \(Checkpoint\) {field}"
        with pytest.raises(InvalidComponentError, match=expected):
            store.append("s", [Message("user", "fine"), outer], expected_version=0)

    @pytest.mark.parametrize("operation", ["load", "append", "set_meta", "clear"])
    def test_a_session_id_is_refused_the_same_way_everywhere(
        self, store: SessionStore, operation: str
    ) -> None:
        """A session id '\\ud800' is an InvalidArgumentError from every method of every store."""
        calls = {
            "load": lambda: store.load("\ud800"),
            "append": lambda: store.append("\ud800", [Message("user", "hi")], expected_version=0),
            "set_meta": lambda: store.set_meta("\ud800", "k", "v"),
            "clear": lambda: store.clear("\ud800"),
        }
        expected = rf"{_owner(store)}\.a?{operation}: session_id='\\ud800' holds a lone"
        with pytest.raises(InvalidArgumentError, match=expected):
            calls[operation]()

    def test_metadata_is_refused_the_same_way_everywhere(self, store: SessionStore) -> None:
        """A metadata key or value with a lone surrogate is refused, the session untouched."""
        with pytest.raises(InvalidArgumentError, match=r"value='v\\udc80' holds a lone"):
            store.set_meta("s", "k", "v\udc80")
        with pytest.raises(InvalidArgumentError, match=r"key='k\\udc80' holds a lone"):
            store.set_meta("s", "k\udc80", "v")
        assert {} == dict(store.load("s").meta)

    def test_a_whole_emoji_is_stored(self, store: SessionStore) -> None:
        """A proper pair, read from the same kind of escape, round-trips in every store."""
        text = json.loads('"done \\ud83d\\ude80"')
        store.append("s", [Message("user", text)], expected_version=0)
        assert text == store.load("s").components[0].content


class TestNulCharacters:
    """PostgreSQL's text holds no NUL ('\\x00'): every store refuses it in ids and metadata
    (so a test on memory fails where production on Postgres would), and keeps it in a
    component, whose JSON record writes it as an escape."""

    def test_a_session_id_is_refused_the_same_way_everywhere(self, store: SessionStore) -> None:
        expected = rf"{_owner(store)}\.append: session_id='a\\x00b' holds a NUL character"
        with pytest.raises(InvalidArgumentError, match=expected):
            store.append("a\x00b", [Message("user", "hi")], expected_version=0)

    def test_metadata_is_refused_the_same_way_everywhere(self, store: SessionStore) -> None:
        with pytest.raises(InvalidArgumentError, match=r"value='v\\x00' holds a NUL"):
            store.set_meta("s", "k", "v\x00")
        with pytest.raises(InvalidArgumentError, match=r"key='\\x00' holds a NUL"):
            store.set_meta("s", "\x00", "v")
        assert {} == dict(store.load("s").meta)

    def test_one_inside_a_component_is_kept(self, store: SessionStore) -> None:
        text = "before\x00after"
        inner = Checkpoint("older \x00", span=[Message("user", text)], replaced_count=1)
        store.append("s", [Message("user", text), inner], expected_version=0)
        first, second = store.load("s").components
        assert text == first.content
        assert isinstance(second, Checkpoint)
        assert ("older \x00", text) == (second.summary, second.span[0].content)


class TestCorruptSQLiteFile:
    def test_a_file_that_is_not_a_database(self, tmp_path: Path) -> None:
        """A file that is not a database gets advice about the file, not its directory."""
        path = tmp_path / "notes.db"
        path.write_bytes(b"these are my notes, not a database\n" * 200)
        with pytest.raises(SessionStoreError) as caught:
            SQLiteStore(path)
        text = str(caught.value)
        assert "is not a SQLite database or is damaged (file is not a database)" in text
        assert "check that the path names your session file" in text
        assert "writable" not in text
        assert b"these are my notes" in path.read_bytes()  # nothing was overwritten

    def test_a_damaged_database(self, tmp_path: Path) -> None:
        """A database whose pages were overwritten gets the same advice on load."""
        path = tmp_path / "sessions.db"
        with SQLiteStore(path) as store:
            for i in range(200):
                store.append("s", [Message("user", f"turn {i} " * 40)], expected_version=i)
        data = bytearray(path.read_bytes())
        data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first
        path.write_bytes(bytes(data))
        expected = "is not a SQLite database or is damaged"
        with pytest.raises(SessionStoreError, match=expected), SQLiteStore(path) as store:
            store.load("s")
