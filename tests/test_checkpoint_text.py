"""What a checkpoint's opening lines tell the model about the state it carries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mellea_ctx import Checkpoint, Ledger, LedgerEntry
from mellea_ctx._core.ledger import KINDS

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
