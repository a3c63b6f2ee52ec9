"""Reference documents and the storytellers a restricted document is readable by."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    ForeignKey,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class ReferenceDocumentRow(Base):
    """A searchable document. Word and trigram indexes are created by migrations per dialect."""

    __tablename__ = "reference_documents"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    folder: Mapped[str] = mapped_column(String(200), default="General")
    doc_type: Mapped[str] = mapped_column(String(200), default="General")
    keywords: Mapped[str] = mapped_column(Text, default="")
    contents: Mapped[str] = mapped_column(Text, default="")
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)

    restrictions: Mapped[list[ReferenceRestrictionRow]] = relationship(
        cascade="all, delete-orphan", passive_deletes=True, lazy="selectin"
    )


class ReferenceRestrictionRow(Base):
    """One storyteller allowed to read a restricted document.

    Deliberately no foreign key to storytellers: deleting a storyteller must not turn a document
    that was restricted to it into a global one. Storyteller ids are never reused.
    """

    __tablename__ = "reference_document_storytellers"

    document_id: Mapped[int] = mapped_column(
        Id, ForeignKey("reference_documents.id", ondelete="CASCADE"), primary_key=True
    )
    storyteller_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
