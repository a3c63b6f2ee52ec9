"""The world's prog catalogue as the admin commands see it: lookup and custom-tool validity.

The catalogue may be unknown (a bridged game that is not running). Commands then still work,
but nothing is checked against progs, and validity is reported as unknown rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import typer

from progs.types import ProgSignature
from storyteller_daemon.cli.support import open_store, state
from storyteller_daemon.domain.storytellers import CustomTool
from storyteller_daemon.errors import ConfigError, NotFoundError
from world_adapter.errors import WorldAdapterError

Catalogue = list[ProgSignature] | None
"""The world's progs, or None when the world cannot be asked."""

UNKNOWN = "unknown (world unreachable)"


async def load_catalogue(ctx: typer.Context) -> Catalogue:
    """Ask the configured world for its progs; None if it cannot answer."""
    # Looked up on the module at call time so the composition root stays the one place that
    # chooses the world (and tests can substitute it).
    from storyteller_daemon import app as composition

    cfg = state(ctx).config()
    try:
        return await composition.prog_catalogue(cfg)
    except (WorldAdapterError, ConfigError):
        # The world is down, or cannot be reached from this shell (no token here): what the
        # database holds is still shown, with world-derived fields marked unknown.
        return None


async def load_checkable(ctx: typer.Context) -> tuple[Catalogue, str]:
    """For commands that check a prog name: the world's progs (kept in the database for when
    it is down), else the ones kept when it last answered; and the note their confirmation
    ends with ("" for the live catalogue)."""
    world = state(ctx).config().world.identity
    live = await load_catalogue(ctx)
    async with open_store(ctx) as store:
        if live is not None:
            await store.catalogues.save(world, live, store.clock.now())
            return live, ""
        kept = await store.catalogues.load(world)
    if kept is None:
        return None, ""
    when = kept.fetched_at.strftime("%Y-%m-%d %H:%M UTC")
    return kept.progs, f" (world unreachable: checked against its progs as of {when})"


def find_prog(catalogue: Catalogue, ref: str) -> ProgSignature | None:
    """The prog named by `ref` (id or case-insensitive name), if the catalogue has it."""
    return next((p for p in catalogue or () if p.matches(ref)), None)


def require_prog(catalogue: Catalogue, ref: str, *, hint: str = "") -> ProgSignature | None:
    """The prog named by `ref`; None when the catalogue is unknown.

    Raises:
        NotFoundError: the catalogue is known and has no such prog (`hint` ends the message).
    """
    if catalogue is None:
        return None
    prog = find_prog(catalogue, ref)
    if prog is None:
        raise NotFoundError(f"The world has no prog with id or name '{ref.strip()}'{hint}.")
    return prog


def stored_reference(catalogue: Catalogue, ref: str, *, hint: str = "") -> str:
    """What to store for a prog the operator named: its id when the catalogue knows it.

    FutureMUD stores prog ids, so ids keep exported documents loadable there; with the catalogue
    unknown, the reference is kept as typed.

    Raises:
        NotFoundError: the catalogue is known and has no such prog.
    """
    prog = require_prog(catalogue, ref, hint=hint)
    return str(prog.id) if prog else ref.strip()


def describe_prog(catalogue: Catalogue, ref: str) -> str:
    """``Name (#id)`` when the catalogue knows the prog, else the stored reference."""
    prog = find_prog(catalogue, ref)
    return f"{prog.name} (#{prog.id})" if prog else ref


@dataclass(frozen=True)
class ToolCheck:
    """Whether a custom tool can be offered to the model, and why not.

    Attributes:
        known: False when the catalogue is unknown; `problems` is then empty and means nothing.
        prog: the bound prog's signature, when the catalogue has it.
        problems: one sentence per reason the tool is invalid.
    """

    known: bool
    prog: ProgSignature | None
    problems: tuple[str, ...]

    @property
    def valid(self) -> bool | None:
        """True or False when known; None when the world could not be asked."""
        return not self.problems if self.known else None

    def describe(self) -> str:
        """``valid``, ``unknown (world unreachable)`` or ``INVALID: reasons``."""
        if not self.known:
            return UNKNOWN
        return (
            "valid" if not self.problems else "INVALID (not offered): " + "; ".join(self.problems)
        )


def check_tool(tool: CustomTool, catalogue: Catalogue) -> ToolCheck:
    """Valid means: the prog exists, compiles, and the descriptions name exactly its parameters.

    Parameter names are compared case-insensitively, as every other parameter lookup is.
    """
    if catalogue is None:
        return ToolCheck(known=False, prog=None, problems=())
    prog = find_prog(catalogue, tool.prog)
    if prog is None:
        return ToolCheck(True, None, (f"the world has no prog '{tool.prog}'",))
    problems: list[str] = []
    if prog.compile_error:
        problems.append(f"prog {prog.name} does not compile: {prog.compile_error}")
    wanted = {p.casefold(): p for p in prog.parameter_names}
    described = {n.casefold(): n for n, _ in tool.parameter_descriptions}
    missing = [wanted[k] for k in wanted if k not in described]
    stale = [described[k] for k in described if k not in wanted]
    if missing:
        problems.append("no description entry for parameter(s) " + ", ".join(missing))
    if stale:
        problems.append("descriptions for parameter(s) the prog lacks: " + ", ".join(stale))
    if len(described) != len(tool.parameter_descriptions):
        problems.append("a parameter is described twice")
    return ToolCheck(True, prog, tuple(problems))
