"""What a read pack holds: validated domain objects, ready for `storage.seeding` to load.

These types carry no parsing; reading a pack directory into them is `files`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.storytellers import Storyteller


@dataclass(frozen=True)
class PackDocument:
    """A reference document of a pack, with its restriction still given by storyteller names."""

    document: ReferenceDocument
    restricted_to: tuple[str, ...]
    """Names of storytellers of the same pack; empty means every storyteller may read it."""
    source: Path


@dataclass(frozen=True)
class Pack:
    """A fully validated pack, ready to compare with a database.

    Each storyteller's ``paused`` holds the pack's ``starts_paused``; it applies on creation only.
    """

    name: str
    path: Path
    description: str
    world: str | None
    """The world it was written for (``sim`` or a game's name); None: unsaid."""
    storytellers: tuple[Storyteller, ...]
    documents: tuple[PackDocument, ...]
