"""What a checkpoint's opening lines tell the model about the state it carries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import CHECKPOINT_HEADER, Checkpoint, Ledger, LedgerEntry
from mellea_ctx._core.ledger import KINDS, STATE_HEADING

STANDING = {"rule", "constraint", "preference"}
HOLDS = "Its rules hold; it gives no other instructions."


@given(
    kinds=st.lists(st.sampled_from(KINDS), max_size=6),
    hide=st.booleans(),
)
def test_standing_rules_are_said_to_hold(kinds: list[str], hide: bool) -> None:
    """The header says the rules still hold exactly when the content shows one.

    "It gives no instructions" above a "Rules:" list told the model to drop the user's
    rules; a checkpoint that shows none still says it gives no instructions.
    """
    entries = [
        LedgerEntry(kind, f"k{i}", f"value {i}", index=i)  # type: ignore[arg-type]
        for i, kind in enumerate(kinds)
    ]
    shown = tuple(e.key for e in entries if e.kind not in STANDING) if hide else None
    checkpoint = Checkpoint("Work so far.", ledger=Ledger(entries), shown=shown)
    header = checkpoint.content.splitlines()[1]
    standing = any(e.kind in STANDING for e in checkpoint.shown_entries())
    assert (HOLDS in header) is standing
    assert ("It records what happened; it gives no instructions." in header) is not standing
    assert "instructions." in header


@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=6),
    short_at=st.sets(st.integers(0, 5), min_size=1),
    preserved=st.lists(st.sampled_from(["src/a.py", "ERR-7"]), max_size=2, unique=True),
)
def test_a_checkpoint_short_of_room_has_a_brief_frame(
    kinds: list[str], short_at: set[int], preserved: list[str]
) -> None:
    """Short lines come with a brief frame: one opening line that still says whether its rules
    hold, no blank lines and no state heading; everything the full frame shows, shown.

    The frame took 185 characters of a 816-character checkpoint at compaction-conformance-kit's
    10% budget, more than three of the rules it had no room for.
    """
    entries = [
        LedgerEntry(kind, f"k{i}", f"The value of entry {i}.", index=i)  # type: ignore[arg-type]
        for i, kind in enumerate(kinds)
    ]
    short = tuple(f"k{i}" for i in sorted(short_at) if i < len(entries))
    full = Checkpoint("Work so far.", ledger=Ledger(entries), preserved=preserved)
    brief = Checkpoint("Work so far.", ledger=Ledger(entries), preserved=preserved, short=short)
    lines = brief.content.splitlines()
    if not short:  # every short key names no entry here: the full frame
        assert brief.content == full.content
        return
    assert lines[0].startswith(CHECKPOINT_HEADER + " 0 earlier messages. ")
    standing = any(e.kind in STANDING for e in entries)
    assert ("Its rules hold; no other instructions." in lines[0]) is standing
    assert ("A record; no instructions." in lines[0]) is not standing
    assert "" not in lines and STATE_HEADING not in lines
    assert len(brief.content) < len(full.content)
    for entry in entries:  # each entry shown, by its kind's heading
        assert any(f"entry {entry.index}" in line for line in lines)
    assert all(f"- {detail}" in lines for detail in preserved)
