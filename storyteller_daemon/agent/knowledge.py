"""The storyteller's stored knowledge as prompt blocks: the digest, open situations, memories.

Everything here was stored earlier, and much of it was written from players' words (a memory or
situation whose `Provenance.from_player` is set; the digest, a model's summary of such notes,
always counts as such). So every block sits inside a ``notes`` fence (`fencing`), titles and
texts are one-line JSON strings, and each entry written from players' words is marked
``[from players]``; the prompt's preface (`NOTES_NOTE`) says what that means. A turn whose
prompt keeps such an entry is a turn players' text reached (`prompts.TurnPrompt.from_player`).

Each function returns a `context.Block` with its priority, share of the budget and place in the
prompt; `context.assemble` decides how much of it is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from storyteller_daemon.agent.context import Block, Item, Priority, Render
from storyteller_daemon.agent.fencing import Fence, quoted
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.memory_ranking import RankedMemory
from storyteller_daemon.domain.situations import Situation
from storyteller_daemon.domain.text import cap

FROM_PLAYERS = " [from players]"
NO_SITUATIONS = "There are currently no unresolved situations."
SITUATIONS_HEADER = "Current unresolved situations:"
DIGEST_HEADER = "Digest of what has happened so far:"
DIGEST_CUT = "\n[Digest cut to fit the prompt's budget.]"
REMIT_HEADER = "Open situations across your whole remit (the most recently changed first):"
HERE_HEADER = "Open situations about this event's characters and room (characters first):"
SCOPED_HEADER = "Open situations about particular characters and rooms (characters first):"
MORE_SITUATIONS = "More open situations of this kind are not listed here."
MEMORIES_HEADER = "Your memories of characters (the most relevant first):"
MORE_MEMORIES = (
    "Less relevant memories are not shown; ListMemoriesForPlayer and ShowMemory show them."
)
MEMORY_TEXT_CHARS = 400
"""A memory's text is cut to this in a prompt (ShowMemory shows all of it)."""

# Shares of the budget (see `context`): together a little over half of it.
DIGEST_SHARE = 0.12
REMIT_SITUATIONS_SHARE = 0.08
SCOPED_SITUATIONS_SHARE = 0.08
MEMORIES_SHARE = 0.20
RECENT_SHARE = 0.08


def _listed(header: str, fence: Fence, source: str, note: str, more: bool = False) -> Render:
    """Renders a list block: header, fenced lines, and `note` when entries were left out
    (dropped for space, or `more` than the store was asked for)."""

    def render(lines: Sequence[str], dropped: int) -> str:
        if not lines:
            return ""
        block = [header, fence.block("\n".join(lines), source, strip=False)]
        return "\n".join([*block, note] if dropped or more else block)

    return render


def digest_block(digest: Digest | None, fence: Fence, unavailable: str = "") -> Block:
    """The storyteller's rolling digest (stable; a model wrote it from notes that came partly
    from players, so it is framed as theirs)."""
    items = (Item(digest.text.strip(), True),) if digest and digest.text.strip() else ()

    def render(texts: Sequence[str], dropped: int) -> str:
        if not texts:
            return ""
        source = "the digest (a model's summary of notes, some from players' words)"
        return "\n".join([DIGEST_HEADER, fence.block(texts[0], source)])

    return Block(
        "digest",
        Priority.DIGEST,
        items,
        render,
        share=DIGEST_SHARE,
        stable=True,
        cut_marker=DIGEST_CUT,
        notes=True,
        unavailable=unavailable,
    )


def _situation_line(situation: Situation, scoped: bool) -> Item:
    scope = f" ({situation.scope_label[0].lower()}{situation.scope_label[1:]})" if scoped else ""
    mark = FROM_PLAYERS if situation.provenance.from_player else ""
    return Item(f"- #{situation.id}{scope}{mark}: {quoted(situation.title)}", bool(mark))


def remit_situations_block(
    situations: Sequence[Situation], more: bool, fence: Fence, unavailable: str = ""
) -> Block:
    """The storyteller-wide (universal) open situations, newest changed first (stable)."""
    return Block(
        "situations (remit)",
        Priority.SITUATIONS,
        tuple(_situation_line(s, scoped=False) for s in situations),
        _listed(REMIT_HEADER, fence, "situations", MORE_SITUATIONS, more),
        share=REMIT_SITUATIONS_SHARE,
        stable=True,
        notes=True,
        unavailable=unavailable,
    )


def scoped_situations_block(
    situations: Sequence[Situation],
    more: bool,
    fence: Fence,
    *,
    for_event: bool,
    none_at_all: bool,
    unavailable: str = "",
) -> Block:
    """Open situations scoped to the trigger's characters (first) and room; for a trigger
    without either, every scoped one. Says there are none when the storyteller has none."""
    header = HERE_HEADER if for_event else SCOPED_HEADER
    listed = _listed(header, fence, "situations", MORE_SITUATIONS, more)

    def render(lines: Sequence[str], dropped: int) -> str:
        return NO_SITUATIONS if none_at_all else listed(lines, dropped)

    items = tuple(_situation_line(s, scoped=True) for s in situations)
    return Block(
        "situations (here)",
        Priority.SITUATIONS,
        (Item(NO_SITUATIONS),) if none_at_all and not unavailable else items,
        render,
        share=SCOPED_SITUATIONS_SHARE,
        notes=not none_at_all,
        unavailable=unavailable,
    )


def _memory_line(ranked: RankedMemory) -> Item:
    memory = ranked.memory
    mark = FROM_PLAYERS if memory.provenance.from_player else ""
    text = cap(" ".join(memory.text.split()), MEMORY_TEXT_CHARS)
    return Item(
        f"- #{memory.id} about character #{memory.character_id} (importance "
        f"{memory.importance}, {memory.changed_on.date().isoformat()}){mark}: "
        f"{quoted(memory.title)}: {quoted(text)}",
        bool(mark),
    )


def memories_block(ranked: Sequence[RankedMemory], fence: Fence, unavailable: str = "") -> Block:
    """Memories best first (`domain.memory_ranking`)."""
    return Block(
        "memories",
        Priority.MEMORIES,
        tuple(_memory_line(r) for r in ranked),
        _listed(MEMORIES_HEADER, fence, "memories", MORE_MEMORIES),
        share=MEMORIES_SHARE,
        notes=True,
        unavailable=unavailable,
    )
