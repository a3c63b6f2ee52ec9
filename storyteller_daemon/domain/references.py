"""Reference documents: the storyteller's searchable knowledge base, and who may read it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storyteller_daemon.errors import ValidationError

DEFAULT_FOLDER = "General"
DEFAULT_TYPE = "General"
DEFAULT_DESCRIPTION = "A reference document"


def search_terms(query: str | None) -> list[str]:
    """Split a query into its terms (blank query → no terms, which lists everything)."""
    return [t for t in (query or "").split() if t.strip()]


def parse_restriction_csv(text: str) -> frozenset[int]:
    """Parse ``5,7,11`` into ids; blank means global. Raise on a non-numeric or non-positive id."""
    ids: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isascii() or not part.isdigit() or int(part) <= 0:
            raise ValidationError(f"'{part}' is not a storyteller id.")
        ids.add(int(part))
    return frozenset(ids)


def format_restriction_csv(ids: Iterable[int]) -> str:
    """Distinct ids, ascending, comma-separated (empty string = global)."""
    return ",".join(str(i) for i in sorted(set(ids)))


@dataclass(frozen=True)
class ReferenceDocument:
    """A document storytellers can search and read."""

    name: str
    id: int | None = None
    description: str = DEFAULT_DESCRIPTION
    folder: str = DEFAULT_FOLDER
    doc_type: str = DEFAULT_TYPE
    keywords: str = ""
    contents: str = ""
    restricted_to: frozenset[int] = frozenset()
    """Storyteller ids allowed to see it; empty means every storyteller."""

    @property
    def is_global(self) -> bool:
        """True when every storyteller may see it."""
        return not self.restricted_to

    def is_visible_to(self, storyteller_id: int) -> bool:
        """Global documents are visible to all; restricted ones only to listed storytellers."""
        return self.is_global or storyteller_id in self.restricted_to

    def matches(self, query: str | None) -> bool:
        """Every term is a case-insensitive substring of at least one of the six text fields."""
        haystacks = [
            f.casefold()
            for f in (
                self.name,
                self.description,
                self.folder,
                self.doc_type,
                self.keywords,
                self.contents,
            )
        ]
        return all(any(t.casefold() in h for h in haystacks) for t in search_terms(query))
