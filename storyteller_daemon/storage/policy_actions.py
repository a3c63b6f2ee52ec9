"""The prog calls the policy's caps and cooldowns count, kept a day to survive a restart."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select

from storyteller_daemon.domain.approvals import PolicyAction
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.policy import PolicyActionRow
from storyteller_daemon.storage.storytellers import as_utc


def id_text(ids: frozenset[int]) -> str:
    """Ids as the comma-separated text stored in `PolicyActionRow`."""
    return ",".join(str(i) for i in sorted(ids))


def id_set(text: str) -> frozenset[int]:
    """The ids of `id_text`'s text."""
    return frozenset(int(part) for part in text.split(",") if part.strip())


def action_to_domain(row: PolicyActionRow) -> PolicyAction:
    """Row → `PolicyAction`."""
    return PolicyAction(
        storyteller_id=row.storyteller_id,
        tool=row.tool,
        at=as_utc(row.at),
        player_id=row.player_id,
        rooms=id_set(row.rooms),
        characters=id_set(row.characters),
    )


class PolicyActionRepository:
    """The prog calls that ran in the last day, for the caps and cooldowns after a restart."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, action: PolicyAction) -> None:
        """Store one prog call that ran."""
        async with self._db.session() as session:
            session.add(
                PolicyActionRow(
                    storyteller_id=action.storyteller_id,
                    tool=action.tool,
                    at=action.at,
                    player_id=action.player_id,
                    rooms=id_text(action.rooms),
                    characters=id_text(action.characters),
                )
            )

    async def since(self, when: datetime) -> list[PolicyAction]:
        """Prog calls that ran at or after `when`, oldest first; older rows are deleted."""
        async with self._db.session() as session:
            await session.execute(delete(PolicyActionRow).where(PolicyActionRow.at < when))
            rows = await session.scalars(
                select(PolicyActionRow).order_by(PolicyActionRow.at, PolicyActionRow.id)
            )
            return [action_to_domain(r) for r in rows]
