"""Checkpoints stored once: the records a durable store writes for a chain, and reading them.

A session compacted k times holds a chain k checkpoints deep (each one's span
holds the one before). Written as one record (:mod:`.._formats.serialize`),
every ``replace`` would rewrite the whole chain, and the k-th would cost k
times the first. Stores instead keep each checkpoint once, as an *entry*
keyed by the digest of its text, and refer to it:

* a checkpoint in the dialogue is stored as ``{"kind": "stored", "checkpoint": DIGEST}``;
* an entry is the checkpoint's own record (:func:`checkpoint_to_record`) whose
  span names each checkpoint it folded in the same way, by digest.

A digest is the SHA-256 of the entry's text, so the same checkpoint has the
same digest in every process, and writing an entry twice is harmless. A
:class:`Chains` remembers, by identity and for as long as each object lives,
the digest of every checkpoint it wrote or read, so a ``replace`` writes only
the entries of checkpoints it has not seen: the new one, whatever the depth.

The invariant each store keeps: an entry is stored only once the entries it
names are (in the same transaction or before), so when an entry is there, its
whole chain is. A write names the digests it relies on without sending them
(:attr:`Encoded.needed`); the store checks, in the write's transaction, that
the session holds them, and when it does not (the session was cleared, or the
checkpoint came from another session) the write is encoded again in full
(:meth:`Chains.encode` with ``full=True``). Entries stay until the session is
cleared. Dialogue records written before this layout (whole checkpoint
records) read as they always did.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import attrs

from .._core.checkpoint import Checkpoint
from .._core.components import CBlock, Component
from .._core.exceptions import InvalidComponentError
from .._core.operations import Operation
from .._formats.checkpoint_records import chain, checkpoint_from_record, checkpoint_to_record
from .._formats.serialize import component_from_record, component_to_record
from .store import dump_records, stored_object

R = TypeVar("R")
T = TypeVar("T")

_STORED: Final = "stored"


class MissingEntries(Exception):
    """Raised by a store inside a write whose ``needed`` entries the session lacks.

    The store rolls the write back and sends it again, encoded in full.
    """


@attrs.frozen
class Encoded:
    """A write's records: one per component, the new entries, and the entries relied on.

    Attributes:
        records: The text of each component, in order (a checkpoint as a reference).
        entries: ``(digest, text)`` of each entry to store, each after those it names.
        needed: Digests the records or entries name that are not in ``entries``:
            the session must hold them already.
    """

    records: list[str]
    entries: list[tuple[str, str]]
    needed: list[str]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _reference(digest: str) -> dict[str, Any]:
    return {"kind": _STORED, "checkpoint": digest}


def _folded(component: object) -> bool:
    return type(component) is Checkpoint


class Chains:
    """A store's memory of the checkpoints it wrote or read, and the encoder of its writes.

    Thread-safe for what stores do with it: each entry is set once per object
    (every thread computes the same digest), and a lookup that races a set
    only misses, which costs one more entry written.
    """

    __slots__ = ("_digests",)

    def __init__(self) -> None:
        self._digests: dict[int, tuple[weakref.ref[Checkpoint], str]] = {}

    def digest_of(self, checkpoint: Checkpoint) -> str | None:
        """The digest remembered for this very object, or ``None``."""
        entry = self._digests.get(id(checkpoint))
        if entry is None or entry[0]() is not checkpoint:
            return None
        return entry[1]

    def _remember(self, checkpoint: Checkpoint, digest: str) -> None:
        ident = id(checkpoint)
        digests = self._digests

        def forget(_ref: object, ident: int = ident) -> None:
            digests.pop(ident, None)

        digests[ident] = (weakref.ref(checkpoint, forget), digest)

    def encode(
        self, owner: str, components: tuple[Component, ...], *, full: bool = False
    ) -> Encoded:
        """Return the records of ``components``, with the entries their checkpoints need.

        With ``full``, every checkpoint of every chain gets its entry (no
        digest is taken on trust).

        Raises:
            InvalidComponentError: As :func:`~.store.dump_records` does (a lone
                surrogate, named by component index and record field, or a
                component kind with no record).
        """
        known: dict[int, str] = {}  # this write's digests, by object id (the objects live)
        entries: list[tuple[str, str]] = []
        needed: dict[str, None] = {}

        def digest_of(checkpoint: Checkpoint) -> str | None:
            found = known.get(id(checkpoint))
            if found is None and not full:
                found = self.digest_of(checkpoint)
            return found

        def relied_on(checkpoint: Checkpoint) -> str:
            digest = digest_of(checkpoint)
            assert digest is not None  # the chain lists each one before any that names it
            if id(checkpoint) not in known:
                needed[digest] = None
            return digest

        records: list[str] = []
        for index, component in enumerate(components):
            if not isinstance(component, Checkpoint) or not _folded(component):
                records.append(_one_record(owner, index, component))
                continue
            try:
                for node in chain(component, lambda c: digest_of(c) is not None):
                    text = _entry_text(node, relied_on)
                    digest = _digest(text)
                    known[id(node)] = digest
                    self._remember(node, digest)  # a digest is the content's: true anywhere
                    entries.append((digest, text))
            except _Unstorable:
                _one_record(owner, index, component)  # raises the store's own message
                raise AssertionError("unreachable: the record holds the same text") from None
            records.append(json.dumps(_reference(relied_on(component)), separators=(",", ":")))
        written = {digest for digest, _ in entries}
        return Encoded(records, entries, [d for d in needed if d not in written])

    def decode(
        self, records: Iterable[str | bytes], entries: Mapping[str, str | bytes]
    ) -> tuple[Component, ...]:
        """Return the components ``records`` describe, their checkpoints built from ``entries``.

        Raises:
            InvalidComponentError: For a damaged record or entry, or a
                reference to an entry the session does not hold.
        """
        built: dict[str, Checkpoint] = {}
        out: list[Component] = []
        for text in records:
            record = stored_object(text, "stored record")
            if record.get("kind") == _STORED:
                out.append(self._build(_named(record), entries, built))
            else:
                out.append(component_from_record(record))
        return tuple(out)

    def _build(
        self, top: str, entries: Mapping[str, str | bytes], built: dict[str, Checkpoint]
    ) -> Checkpoint:
        """Build the checkpoint ``top`` names, its chain first, with an explicit stack."""
        parsed: dict[str, dict[str, Any]] = {}

        def leaf(item: Mapping[str, Any]) -> Component:
            if item.get("kind") == _STORED:
                return built[_named(item)]
            return component_from_record(item)

        stack: list[tuple[str, bool]] = [(top, False)]
        while stack:
            digest, expanded = stack.pop()
            if digest in built:
                continue
            if expanded:
                checkpoint = checkpoint_from_record(parsed.pop(digest), leaf)
                built[digest] = checkpoint
                self._remember(checkpoint, digest)
                continue
            text = entries.get(digest)
            if text is None:
                msg = (
                    f"stored checkpoint {digest!r} is missing from the session's entries; "
                    "the store was changed outside mellea-ctx: restore it or clear the session"
                )
                raise InvalidComponentError(msg)
            entry = parsed[digest] = stored_object(text, "stored record")
            stack.append((digest, True))
            span = entry.get("span", ())
            for item in span if isinstance(span, list) else ():
                if isinstance(item, Mapping) and item.get("kind") == _STORED:
                    named = _named(item)
                    if named not in built:
                        stack.append((named, False))
        return built[top]


def write_chains(
    chains: Chains,
    owner: str,
    components: tuple[Component, ...],
    attempt: Callable[[Encoded], Operation[R, T]],
) -> Operation[R, T]:
    """The operation that writes ``components``: one ``attempt``, once more in full if needed.

    ``attempt`` is the store's write of one encoding; it raises
    :class:`MissingEntries` (having written nothing) when the session lacks an
    entry the encoding relied on, and the write is then encoded in full.
    """
    encoded = chains.encode(owner, components)
    try:
        return (yield from attempt(encoded))
    except MissingEntries:
        return (yield from attempt(chains.encode(owner, components, full=True)))


class _Unstorable(Exception):
    """A new entry's text holds what UTF-8 cannot encode."""


def _entry_text(node: Checkpoint, digest_of: Callable[[Checkpoint], str]) -> str:
    """The entry of ``node``: its own record, each folded checkpoint named by digest."""
    placeholders: dict[int, str] = {}
    span: list[Component] = []
    for component in node.span:
        if _folded(component):
            assert isinstance(component, Checkpoint)
            stand_in = CBlock("")
            placeholders[id(stand_in)] = digest_of(component)
            span.append(stand_in)
        else:
            span.append(component)

    def leaf(component: Component) -> dict[str, Any]:
        named = placeholders.get(id(component))
        return _reference(named) if named is not None else component_to_record(component)

    shallow = attrs.evolve(node, span=span, replaced=None) if placeholders else node
    text = json.dumps(
        checkpoint_to_record(shallow, leaf), ensure_ascii=False, separators=(",", ":")
    )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Unstorable from None
    return text


def _one_record(owner: str, index: int, component: Component) -> str:
    """The component's record text, refused with the message naming ``components[index]``."""
    try:
        return dump_records(owner, [component])[0]
    except InvalidComponentError as exc:
        msg = str(exc).replace("components[0]", f"components[{index}]", 1)
        raise InvalidComponentError(msg) from None


def _named(record: Mapping[str, Any]) -> str:
    digest = record.get("checkpoint")
    if not isinstance(digest, str):
        msg = f"stored checkpoint reference {record!r} is damaged: no digest"
        raise InvalidComponentError(msg)
    return digest
