"""Names are matched case-insensitively: storytellers, custom tools and reference documents are
each unique by `name_key`, in a pack as in the database."""

from __future__ import annotations


def name_key(name: str) -> str:
    """The case-insensitive natural key of a name."""
    return name.strip().casefold()
