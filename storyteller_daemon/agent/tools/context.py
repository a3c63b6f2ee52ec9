"""What a tool handler may use: the turn's services and what the turn is (`ToolContext`), and
whether players' text has reached it (`Taint`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from progs.scalars import is_id
from progs.types import ProgSignature
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.situations import Provenance
from storyteller_daemon.domain.storytellers import Storyteller
from world_adapter.facts import CharacterInfo, RoomInfo


class Taint:
    """Whether players' text has reached a turn: through its trigger (their speech or echoes),
    its prompt (stored text that came from players) or what its tools read. Whatever the turn
    then writes is marked as coming from players (`Provenance.from_player`).

    It also keeps the texts themselves, so the policy can tell an argument that repeats them
    (`agent.dictation`): `heard` are players' words as they came (its trigger's, MCP answers),
    `noted` what it reads of them second hand (its prompt's recent speech and entries written
    from players' words, tool results marked ``FromPlayers``).
    """

    def __init__(
        self, seen: bool = False, *, heard: Iterable[str] = (), noted: Iterable[str] = ()
    ) -> None:
        self.heard: list[str] = []
        self.noted: list[str] = [t for t in noted if t.strip()]
        self.seen = seen or bool(self.noted)
        self.hear(heard)

    def saw(self, from_player: bool) -> None:
        """Note that the turn read text; `from_player` says whether players' text was in it."""
        self.seen = self.seen or from_player

    def hear(self, texts: Iterable[str]) -> None:
        """Note players' words the turn read (blank and repeated texts are skipped)."""
        _add(self.heard, texts, self)

    def note(self, texts: Iterable[str]) -> None:
        """Note stored text written from players' words that the turn read."""
        _add(self.noted, texts, self)


def _add(kept: list[str], texts: Iterable[str], taint: Taint) -> None:
    for text in texts:
        if text.strip() and text not in kept:
            kept.append(text)
            taint.seen = True


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler may use.

    The turn runner builds one over the turn's services (`TurnServices`, taped while the turn
    is recorded); `ToolLoop.run` narrows it to a turn with `for_turn`. A tool reaches a store
    as ``ctx.services.<field>``.

    Attributes:
        services: the world and the stores the turn uses.
        progs: the world's prog catalogue for this turn; None means "ask the world once".
        storyteller: whose turn it is (set by `for_turn`).
        turn_key: the turn's stable key; prog calls derive their idempotency keys from it.
        events: the cursors of the turn's trigger events (set by `for_turn`).
        taint: whether players' text has reached the turn (`for_turn` makes one per turn,
            seeded from the trigger and from this context's own).
        plannable: the tools a plan of this storyteller may name (`registry.plannable_tools`,
            set by the tool loop for each turn).
    """

    services: TurnServices
    progs: tuple[ProgSignature, ...] | None = None
    storyteller: Storyteller | None = None
    turn_key: str = ""
    events: tuple[str, ...] = ()
    taint: Taint = field(default_factory=Taint)
    plannable: frozenset[str] = frozenset()

    def for_turn(
        self, storyteller: Storyteller, turn_key: str, trigger: Trigger | None = None
    ) -> ToolContext:
        """This context bound to one storyteller's turn (and its trigger, for provenance).

        Raises:
            ValueError: the storyteller was never saved (it has no id) or the key is blank.
        """
        if storyteller.id is None:
            raise ValueError(f"storyteller '{storyteller.name}' has no id; save it first")
        if not turn_key.strip():
            raise ValueError("turn_key must not be blank")
        events: tuple[str, ...] = ()
        from_player = self.taint.seen
        heard = list(self.taint.heard)
        if trigger is not None:
            events = tuple(str(t.event.cursor) for t in trigger.all if t.event is not None)
            from_player = from_player or trigger.carries_player_text
            heard += trigger.player_words
        return replace(
            self,
            storyteller=storyteller,
            turn_key=turn_key,
            events=events,
            taint=Taint(from_player, heard=heard, noted=self.taint.noted),
        )

    @property
    def provenance(self) -> Provenance:
        """The provenance of what this turn writes now."""
        return Provenance(run=self.turn_key, events=self.events, from_player=self.taint.seen)

    @property
    def current(self) -> Storyteller:
        """The storyteller of this turn.

        Raises:
            RuntimeError: the context was not bound with `for_turn`.
        """
        if self.storyteller is None or self.storyteller.id is None:
            raise RuntimeError("ToolContext used outside a turn; call for_turn() first")
        return self.storyteller

    @property
    def storyteller_id(self) -> int:
        """The id of this turn's storyteller."""
        storyteller_id = self.current.id
        assert storyteller_id is not None  # guaranteed by `current`
        return storyteller_id


async def world_character(ctx: ToolContext, character_id: int) -> CharacterInfo | None:
    """The character with this id, or None; an id no world holds is not asked of it."""
    return await ctx.services.world.character(character_id) if is_id(character_id) else None


async def world_room(ctx: ToolContext, room_id: int) -> RoomInfo | None:
    """The room with this id, or None; an id no world holds is not asked of it."""
    return await ctx.services.world.room(room_id) if is_id(room_id) else None
