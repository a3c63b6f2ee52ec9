"""The declarative base every table derives from, and the column types they share."""

from __future__ import annotations

from sqlalchemy import BigInteger, DateTime, Integer, MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BigInteger ids autoincrement on SQLite only when declared INTEGER there.
Id = BigInteger().with_variant(Integer(), "sqlite")
UtcDateTime = DateTime(timezone=True)


class Base(DeclarativeBase):
    """Declarative base with named constraints (SQLite batch migrations need the names)."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
