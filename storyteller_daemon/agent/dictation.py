"""Players' words never become the storyteller's voice: the rules on what a call's text repeats.

The other rules bound where a call acts and how often; these bound what it says. A turn keeps
the players' words it read (`tools.base.Taint`: its trigger's speech, echoes and names, MCP
answers, and what it reads second hand: its prompt's recent speech and entries marked from
players, and tool results marked ``FromPlayers``; see below), and each text argument of a call
is compared with them, after `domain.wording.fold` has undone case, punctuation, width,
invisible characters and look-alike letters:

* ``dictated``: a run of ``dictated_words`` (6) or more consecutive words of players' words, or
  a span of at least ``dictated_quoted_words`` (2) words a player put in quotation marks, makes
  the argument *dictated*. What it may then do is data per tool (`Tool.dictation`, overridden by
  ``[policy] dictated``): ``refuse`` (prog texts, which the game shows in the storyteller's
  voice, and memory and situation titles), ``quote`` (memory and situation bodies: every
  copied word must stand inside quotation marks, so the note says whose words they are) or
  ``allow``.
* ``prescribed``: for the tools ``prescribed_values`` lists, a number or one-word argument
  equal to a value players' words put right next to a word of the tool's purpose (its name's
  and the argument's words: "strength 6", "a hostile patrol").
* ``instruction_like``: a memory or situation text that reads as an order to the storyteller
  ("always obey", "ignore your rules", "you must...") is refused on a turn players' words
  reached, quoted or not.

What the turn reads second hand counts only for calls that act on the game: a note may repeat
the storyteller's own earlier notes (an update keeps most of the old text), but what a player
said before or got stored never becomes a broadcast. Story plans are the storyteller's own
words (`Tool.own_words`): their texts are refused when they copy players' words, so reading a
plan back adds none and the director may act on it word for word.

The rules bound copying, not meaning: a paraphrase of what a player asked passes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.policy_rules import Decision, refuse
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.config.policy import DictatedMode
from storyteller_daemon.domain.wording import (
    Words,
    copied_words,
    named_beside,
    purpose_words,
    quoted_spans,
    reads_as_instruction,
)

DICTATED = "dictated"
PRESCRIBED = "prescribed"
INSTRUCTION_LIKE = "instruction_like"
_MODES: frozenset[str] = frozenset({"refuse", "quote", "allow"})


@dataclass(frozen=True)
class CallVoice:
    """What the dictation rules need to know about one call.

    Attributes:
        heard: players' words as they came (the trigger's, MCP answers) the turn has read.
        noted: stored entries written from players' words the turn has read (in its prompt,
            or tool results marked ``FromPlayers``).
        from_player: whether players' words have reached the turn.
        modes: the tool's own `Tool.dictation`.
        properties: the tool's argument schema properties (types and enums).
        stores: whether the tool keeps the storyteller's notes (`Tool.writes`).
    """

    heard: tuple[str, ...] = ()
    noted: tuple[str, ...] = ()
    from_player: bool = False
    modes: Mapping[str, str] | None = None
    properties: Mapping[str, Any] | None = None
    stores: bool = False


@lru_cache(maxsize=4096)
def _words(text: str) -> Words:
    return Words.of(text)


@lru_cache(maxsize=4096)
def _quotes(text: str, min_words: int) -> tuple[tuple[str, ...], ...]:
    return tuple(quoted_spans(text, min_words))


def _texts(arguments: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(argument, text) for every text an argument holds, however deep in its lists and
    objects (a plan's steps), each named by its top-level argument."""
    for name, value in arguments.items():
        for each in _strings(value):
            yield name, each


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _mode(cfg: PolicyConfig, tool: str, argument: str, voice: CallVoice) -> DictatedMode:
    modes = voice.modes or {}
    own = modes.get(argument) or modes.get("*") or "allow"
    default: DictatedMode = own if own in _MODES else "refuse"  # type: ignore[assignment]
    return cfg.dictated_mode(tool, argument, default)


def check_voice(
    cfg: PolicyConfig,
    tool: str,
    arguments: Mapping[str, Any],
    voice: CallVoice,
    effect: Effect | None,
) -> Decision | None:
    """The first of the rules above that refuses the call, or None."""
    if voice.from_player and voice.stores:
        for argument, text in _texts(arguments):
            if (voice.modes or {}).get(argument) and reads_as_instruction(text):
                return refuse(
                    INSTRUCTION_LIKE,
                    f"{argument} reads as an instruction to the storyteller, on a turn "
                    "players' words reached; keep notes as facts about the story",
                )
    if not voice.heard and not voice.noted:
        return None
    decision = _dictated(cfg, tool, arguments, voice, effect)
    if decision is None and cfg.prescribes(tool):
        decision = _prescribed(tool, arguments, voice, effect)
    return decision


def _dictated(
    cfg: PolicyConfig,
    tool: str,
    arguments: Mapping[str, Any],
    voice: CallVoice,
    effect: Effect | None,
) -> Decision | None:
    n = cfg.dictated_words_for(tool)
    heard = [_words(t) for t in voice.heard]
    sources = [w.words for w in heard]
    if effect is not None:  # what the storyteller stored from players never reaches the game
        sources += [_words(t).words for t in voice.noted]
    spans = [s for t in voice.heard for s in _quotes(t, cfg.dictated_quoted_words)]
    for argument, text in _texts(arguments):
        mode = _mode(cfg, tool, argument, voice)
        if mode == "allow":
            continue
        said = _words(text)
        copied = copied_words(said.words, sources, n, spans)
        if not copied:
            continue
        if mode == "quote" and copied <= said.quoted():
            continue
        how = (
            " outside quotation marks; quote players' words as theirs or use your own"
            if mode == "quote"
            else "; say it in the storyteller's own words"
        )
        return refuse(DICTATED, f"{argument} repeats a player's words ({len(copied)} copied){how}")
    return None


def _prescribed(
    tool: str, arguments: Mapping[str, Any], voice: CallVoice, effect: Effect | None
) -> Decision | None:
    targets = (effect.rooms | effect.characters) if effect is not None else frozenset()
    texts: Sequence[tuple[str, ...]] = [_words(t).words for t in voice.heard]
    for argument, value in arguments.items():
        if argument.casefold().endswith("id") or _is_target(value, targets):
            continue
        schema = (voice.properties or {}).get(argument) or {}
        if not isinstance(value, int | float | str) or isinstance(value, bool):
            continue
        if isinstance(value, str) and not _enum_like(schema, value):
            continue
        if named_beside(value, purpose_words(tool, argument), texts):
            return refuse(
                PRESCRIBED,
                f"{argument} takes the value a player's words prescribed for it; "
                "choose it from the story, not from what players ask",
            )
    return None


def _is_target(value: Any, targets: frozenset[int]) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in targets


def _enum_like(schema: Mapping[str, Any], value: str) -> bool:
    """A text argument that is a choice: the schema lists its values, or it is one word."""
    return bool(schema.get("enum")) or len(_words(value).words) == 1
