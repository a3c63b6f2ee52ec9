"""Several daemons over one database: who is alive, who runs which storyteller, shared flags."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from storyteller_daemon.storage.models.base import Base, UtcDateTime


class ClusterInstanceRow(Base):
    """A daemon of the cluster, alive while `expires_at` is ahead (`storage.leases`)."""

    __tablename__ = "cluster_instances"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    renewed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class StorytellerLeaseRow(Base):
    """Which daemon runs a storyteller, until when, and the fencing token of its ownership.

    The token grows by one each time a daemon takes the lease, so a write carrying an older
    token comes from a daemon that lost the storyteller and is refused.
    """

    __tablename__ = "storyteller_leases"
    __table_args__ = (Index("ix_storyteller_leases_owner", "owner"),)

    storyteller_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    token: Mapped[int] = mapped_column(BigInteger, default=0)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    taken_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class ClusterFlagRow(Base):
    """A switch every daemon of the database honours (``kill_switch``)."""

    __tablename__ = "cluster_flags"

    name: Mapped[str] = mapped_column(String(60), primary_key=True)
    on: Mapped[bool] = mapped_column(Boolean)
    changed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    changed_by: Mapped[str] = mapped_column(String(100))
