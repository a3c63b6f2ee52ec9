"""A turn's prompt assembled under its token budget, and the report of what the budget did.

The budget (``[limits] prompt_max_tokens``) covers everything the first request of a turn sends
the model: the instructions, the tool schemas and the user prompt. The user prompt is made of
blocks, and the budget is shared out by priority, highest first:

1. the instructions and tools (counted, never cut);
2. the triggering events (never dropped; cut with a visible marker only if they alone exceed
   what the instructions and tools leave);
3. the director's blocks: story plans, the steps due now, scene claims (`director`);
4. open situations (those about the trigger's characters and room, then the storyteller-wide
   ones);
5. ranked memories;
6. context providers (`providers`), each within its own budget;
7. the digest;
8. recent events (the room's recent speech).

Each block below the events takes at most its share of the budget (`Block.share`), and what is
left after the blocks above it; a list block keeps its best entries and drops the rest, a text
block is cut with a marker. The shares add up to a little over half the budget, so on a normal
turn nothing is squeezed and every block is exactly what the stored knowledge makes it.

Blocks are placed in the prompt in the order given, which is not the priority order: stable
blocks first (static provider text, the digest, the storyteller-wide situations and the story
plans, which read the same whatever the trigger), volatile ones last (what depends on the
trigger, the events last of all), so the prompt's start stays byte-identical between
consecutive turns and the provider can serve it from its prompt cache. The shares keep it so:
a stable block changes only when its stored text does, or when the events are so large that
lower priorities must yield.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from storyteller_daemon.agent.models.tokens import TokenCounter, cut_to_tokens

SEPARATOR = "\n\n"
EVENTS_FLOOR = 256
"""Tokens the events keep even when the instructions and tools leave less (the prompt is then
over its budget, and the report says so)."""


class Priority(IntEnum):
    """Who yields room last (lower) and first (higher)."""

    INSTRUCTIONS = 0
    EVENTS = 1
    PLANS = 2
    SITUATIONS = 3
    MEMORIES = 4
    PROVIDERS = 5
    DIGEST = 6
    RECENT = 7


@dataclass(frozen=True)
class Item:
    """One entry of a block: its text and whether it came from players' words."""

    text: str
    from_player: bool = False
    own_words: bool = False
    """The storyteller's own words even when written on a turn players reached (a story plan,
    whose texts may not copy players' words): never counted among the players' words a call
    may not repeat (`Taint.noted`)."""


Render = Callable[[Sequence[str], int], str]
"""Writes a block from the entries kept and the number dropped ("" for none)."""


@dataclass(frozen=True)
class Block:
    """One part of the user prompt.

    Attributes:
        name: how the run record names it.
        priority: its place in the sharing out of the budget.
        items: its entries in prompt order.
        render: writes the block from the kept entries and the number dropped.
        share: the most of the budget it may take (ignored for the events).
        stable: whether it belongs to the cacheable start of the prompt.
        cut_marker: for a one-entry block of text: cut it with this marker when it does not
            fit ("" drops it instead).
        drop_oldest: drop entries from the start (the oldest) instead of the end.
        notes: whether its entries are stored notes (the prompt's preface explains them).
        unavailable: why the block could not be loaded ("" when it was).
    """

    name: str
    priority: Priority
    items: tuple[Item, ...]
    render: Render
    share: float = 1.0
    stable: bool = False
    cut_marker: str = ""
    drop_oldest: bool = False
    notes: bool = False
    unavailable: str = ""


@dataclass(frozen=True)
class BlockReport:
    """What the budget did to one block (tokens are estimated, separators included)."""

    name: str
    priority: int
    stable: bool
    tokens: int
    kept: int
    dropped: int
    cut: bool = False
    limit: str = ""
    """What held the block back: ``share`` (its share of the budget), ``room`` (what higher
    priorities left), ``unavailable: ...`` (it could not be loaded), or "" (nothing did)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "priority": int(self.priority),
            "stable": self.stable,
            "tokens": self.tokens,
            "kept": self.kept,
            "dropped": self.dropped,
            "cut": self.cut,
            "limit": self.limit,
        }


@dataclass(frozen=True)
class ContextReport:
    """What went into a turn's prompt, for its run record.

    Attributes:
        budget: ``prompt_max_tokens``.
        tokens: the estimated tokens of the instructions, tools and user prompt together.
        stable_chars: how many characters of the user prompt form its stable start.
        blocks: every block, the fixed ones first, then by priority.
    """

    budget: int
    tokens: int
    stable_chars: int
    blocks: tuple[BlockReport, ...] = field(default=())

    @property
    def over_budget(self) -> bool:
        """Whether the instructions and tools left the events less than their floor."""
        return self.tokens > self.budget

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the run record's ``context``)."""
        return {
            "budget": self.budget,
            "tokens": self.tokens,
            "over_budget": self.over_budget,
            "stable_chars": self.stable_chars,
            "blocks": [b.to_dict() for b in self.blocks],
        }


@dataclass(frozen=True)
class Assembly:
    """The user prompt and what the budget did.

    Attributes:
        text: the user prompt.
        report: the budget's report.
        from_player: whether any kept entry came from players' words.
        player_notes: the texts of those entries, but those in the storyteller's own words.
    """

    text: str
    report: ContextReport
    from_player: bool
    player_notes: tuple[str, ...] = ()

    @property
    def stable_prefix(self) -> str:
        """The start of the prompt that reads the same from turn to turn."""
        return self.text[: self.report.stable_chars]


@dataclass(frozen=True)
class _Fitted:
    text: str
    kept: tuple[Item, ...]
    report: BlockReport


def assemble(
    blocks: Sequence[Block],
    *,
    budget: int,
    fixed: Sequence[tuple[str, str]],
    count: TokenCounter,
    preface: str = "",
) -> Assembly:
    """The user prompt of `blocks` (in prompt order) under `budget`.

    Args:
        blocks: the prompt's blocks, in the order they appear.
        budget: tokens for the fixed texts and the user prompt together.
        fixed: (name, text) of what the request sends besides the user prompt (instructions,
            tool schemas): counted, never cut.
        count: the token counter.
        preface: text put before every other block whenever a block of stored notes keeps an
            entry (the note on how stored notes are framed); its room is set aside first.
    """
    fixed_reports = [
        BlockReport(name, Priority.INSTRUCTIONS, True, count(text), 1, 0) for name, text in fixed
    ]
    room = budget - sum(r.tokens for r in fixed_reports)
    if not any(b.items for b in blocks if b.notes):
        preface = ""
    if preface:
        room -= count(preface + SEPARATOR)
    # Within a priority the volatile block, which the trigger made relevant, goes first.
    order = sorted(range(len(blocks)), key=lambda i: (blocks[i].priority, blocks[i].stable))
    fitted: dict[int, _Fitted] = {}
    for index in order:
        block = blocks[index]
        if block.priority is Priority.EVENTS:
            allowance, limit = max(room, EVENTS_FLOOR), "room"
        else:
            share = int(block.share * budget)
            allowance, limit = (share, "share") if share <= room else (max(room, 0), "room")
        fitted[index] = _fit(block, allowance, limit, count)
        room -= fitted[index].report.tokens
    parts = [(blocks[i], fitted[i]) for i in range(len(blocks)) if fitted[i].text]
    if not any(block.notes for block, _ in parts):
        preface = ""
    stable = [preface] if preface else []
    stable += [f.text for block, f in parts if block.stable]
    volatile = [f.text for block, f in parts if not block.stable]
    text = SEPARATOR.join(stable + volatile)
    stable_chars = len(SEPARATOR.join(stable) + SEPARATOR) if stable and volatile else 0
    tokens = sum(r.tokens for r in fixed_reports) + count(text)
    if preface:  # listed so the blocks' tokens add up to the prompt's
        noted = count(preface + SEPARATOR)
        fixed_reports.append(BlockReport("notes preface", Priority.INSTRUCTIONS, True, noted, 1, 0))
    report = ContextReport(
        budget=budget,
        tokens=tokens,
        stable_chars=stable_chars,
        blocks=(*fixed_reports, *(fitted[i].report for i in order)),
    )
    tainted = any(item.from_player for _, f in parts for item in f.kept)
    notes = tuple(
        item.text for _, f in parts for item in f.kept if item.from_player and not item.own_words
    )
    return Assembly(text, report, tainted, notes)


def _fit(block: Block, allowance: int, limit: str, count: TokenCounter) -> _Fitted:
    """The block at most `allowance` tokens (its separator included)."""
    items = block.items

    def cost(text: str) -> int:
        return count(text + SEPARATOR) if text else 0

    def fitted(kept: Sequence[Item], text: str, cut: bool = False, why: str = "") -> _Fitted:
        dropped = len(items) - len(kept)
        held = why or (limit if dropped or cut else "")
        report = BlockReport(
            block.name, block.priority, block.stable, cost(text), len(kept), dropped, cut, held
        )
        return _Fitted(text, tuple(kept), report)

    if block.unavailable:
        return fitted((), "", why=f"unavailable: {block.unavailable}")
    whole = block.render([i.text for i in items], 0)
    if cost(whole) <= allowance:
        return fitted(items, whole)
    if block.cut_marker and len(items) == 1:
        [item] = items

        def rendered(text: str) -> int:
            return cost(block.render([text], 0))

        head = cut_to_tokens(item.text, allowance, block.cut_marker, rendered)
        if head:
            return fitted(items, block.render([head], 0), cut=True)
        return fitted((), "")
    # The most entries whose block fits: more entries never make a block cheaper.
    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if cost(_render_kept(block, middle)) <= allowance:
            low = middle
        else:
            high = middle - 1
    text = _render_kept(block, low)
    kept = items[len(items) - low :] if block.drop_oldest else items[:low]
    return fitted(kept if text else (), text)


def _render_kept(block: Block, keep: int) -> str:
    items = block.items
    kept = items[len(items) - keep :] if block.drop_oldest else items[:keep]
    if not kept:
        return ""
    return block.render([i.text for i in kept], len(items) - keep)
