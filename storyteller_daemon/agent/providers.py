"""Context providers: what a storyteller's own list of sources adds to its prompt.

Each provider (`domain.direction.ContextProvider`) is read once per turn, in order, and becomes
one prompt block within its own token budget:

* ``text``: the admin's text, as written (stable: it sits in the prompt's cacheable start);
* ``prog``: a prog's output, run with no arguments (the heartbeat status prog is the same
  thing, `prog_output`), framed as world text;
* ``query``: one read-only SELECT over the daemon's database (`ports.ProviderQueries`) with
  ``:storyteller_id``, ``:room_id`` and ``:now`` bound, its rows framed as stored notes. What the
  database holds may have come from players, so a query's rows count as players' text;
* ``digest``: the storyteller's rolling digest, which `prompts` places where the digest always
  goes, with this provider's budget in place of the default share.

A provider that fails (a prog error, a refused or slow query, a missing service) becomes a
marked gap in the prompt (``[context provider NAME unavailable: why]``), never a failed turn;
every provider's output or gap goes into the run record.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.context import Block, Item, Priority
from storyteller_daemon.agent.fencing import Fence
from storyteller_daemon.agent.ports import ProviderQueries
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.direction import ContextProvider, ProviderKind, QueryRows
from storyteller_daemon.errors import ToolError
from world_adapter.errors import WorldAdapterError
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

PROVIDER_CUT = "\n[Cut to the provider's budget.]"
MAX_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class ProviderOutput:
    """What one provider gave for a turn: its text, or why it gave none."""

    provider: ContextProvider
    text: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the run record's ``direction.providers``)."""
        return {
            "name": self.provider.name,
            "kind": self.provider.kind.value,
            "ok": not self.error,
            "text": self.text,
            "error": self.error,
        }


async def prog_output(world: WorldClient, prog: str, key: str) -> str:
    """A prog's output run with no arguments, as text.

    Raises:
        WorldAdapterError: the world could not run it.
    """
    outcome = await world.execute_prog(prog, {}, key)
    value = outcome.value
    return value if isinstance(value, str) else str(value) if value is not None else ""


def _rows_text(rows: QueryRows) -> str:
    if not rows.rows:
        return "(no rows)"
    lines = [" | ".join(rows.columns)]
    lines += [" | ".join("NULL" if v is None else v for v in row) for row in rows.rows]
    if rows.truncated:
        lines.append("(more rows not shown)")
    return "\n".join(lines)


async def read_providers(
    providers: Sequence[ContextProvider],
    trigger: Trigger,
    *,
    storyteller_id: int,
    world: WorldClient,
    queries: ProviderQueries | None,
    turn_key: str,
) -> list[ProviderOutput]:
    """Every provider's output for this turn, in order (the digest's text is left to the
    prompt builder, which reads the digest anyway)."""
    outputs = []
    for provider in providers:
        try:
            text = await _read(provider, trigger, storyteller_id, world, queries, turn_key)
        except (WorldAdapterError, ToolError) as exc:
            log.warning("context provider %s failed: %s", provider.name, exc)
            outputs.append(ProviderOutput(provider, error=str(exc)[:300] or type(exc).__name__))
            continue
        outputs.append(ProviderOutput(provider, text=text[:MAX_OUTPUT_CHARS]))
    return outputs


async def _read(
    provider: ContextProvider,
    trigger: Trigger,
    storyteller_id: int,
    world: WorldClient,
    queries: ProviderQueries | None,
    turn_key: str,
) -> str:
    if provider.kind is ProviderKind.TEXT:
        return provider.source
    if provider.kind is ProviderKind.PROG:
        return await prog_output(world, provider.source, f"provider:{provider.name}:{turn_key}")
    if provider.kind is ProviderKind.QUERY:
        if queries is None:
            raise ToolError("queries are not available here")
        parameters = {
            "storyteller_id": storyteller_id,
            "room_id": trigger.room_id,
            "now": trigger.occurred_at.isoformat(),
        }
        return _rows_text(await queries.select(provider.source, parameters))
    return ""


def provider_blocks(
    outputs: Sequence[ProviderOutput], budget: int, world: Fence, notes: Fence
) -> tuple[list[Block], list[Block]]:
    """The (stable, volatile) blocks of the providers other than the digest, in order."""
    stable: list[Block] = []
    volatile: list[Block] = []
    for output in outputs:
        provider = output.provider
        if provider.kind is ProviderKind.DIGEST:
            continue
        block = _block(output, min(1.0, provider.budget_tokens / max(budget, 1)), world, notes)
        (stable if provider.kind is ProviderKind.TEXT else volatile).append(block)
    return stable, volatile


def _block(output: ProviderOutput, share: float, world: Fence, notes: Fence) -> Block:
    provider = output.provider
    header = f"Context from {provider.name}:"

    def render(texts: Sequence[str], dropped: int) -> str:
        if not texts:
            return ""
        if output.error:
            return texts[0]
        if provider.kind is ProviderKind.PROG:
            return "\n".join([header, world.block(texts[0], f"prog {provider.source}")])
        if provider.kind is ProviderKind.QUERY:
            body = notes.block(texts[0], f"query {provider.name}", strip=False)
            return "\n".join([header, body])
        return "\n".join([header, texts[0]])

    if output.error:
        gap = f"[Context provider {provider.name} unavailable: {output.error}]"
        items: tuple[Item, ...] = (Item(gap),)
    elif output.text.strip():
        items = (Item(output.text, provider.kind is ProviderKind.QUERY),)
    else:
        items = ()
    return Block(
        f"provider {provider.name}",
        Priority.PROVIDERS,
        items,
        render,
        share=share,
        stable=provider.kind is ProviderKind.TEXT,
        cut_marker=PROVIDER_CUT,
        notes=provider.kind is ProviderKind.QUERY,
    )
