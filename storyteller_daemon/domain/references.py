"""Reference documents: the storyteller's searchable knowledge base, and who may read it.

A search hit carries a snippet: a short passage of the document's contents around the first
place a query term appears, that occurrence marked «like this», whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storyteller_daemon.errors import ValidationError

DEFAULT_FOLDER = "General"
DEFAULT_TYPE = "General"
DEFAULT_DESCRIPTION = "A reference document"

SNIPPET_WIDTH = 160
"""Characters of contents a snippet shows (more when a single match is longer)."""
MARK_OPEN, MARK_CLOSE = "«", "»"
"""What a snippet puts around the occurrence it was cut around."""
ELLIPSIS = "…"
_SPACE = re.compile(r"\s")


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


@dataclass(frozen=True)
class ReferenceHit:
    """A document a search found, with a snippet of its contents around the first match."""

    document: ReferenceDocument
    snippet: str


def _folded(text: str) -> tuple[str, list[int] | None]:
    """`text` case-folded, and for each folded character the index of its source character.

    None stands for the identity: ASCII text folds character for character.
    """
    if text.isascii():
        return text.lower(), None
    pieces: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(text):
        folded = char.casefold()
        pieces.append(folded)
        origin.extend([i] * len(folded))
    return "".join(pieces), origin


def first_match(text: str, terms: Iterable[str]) -> tuple[int, int] | None:
    """Start and end in `text` of the earliest case-insensitive occurrence of any term.

    Terms are compared case-folded, as `ReferenceDocument.matches` compares them; of two
    occurrences starting at the same place the longer wins. None when no term occurs.
    """
    folded, origin = _folded(text)
    best: tuple[int, int] | None = None
    for term in terms:
        needle = term.casefold()
        at = folded.find(needle)
        if at >= 0 and (best is None or (at, -len(needle)) < (best[0], -best[1])):
            best = (at, len(needle))
    if best is None:
        return None
    at, length = best
    if origin is None:
        return at, at + length
    return origin[at], origin[at + length - 1] + 1


def snippet(text: str, terms: Sequence[str], width: int = SNIPPET_WIDTH) -> str:
    """About `width` characters of `text` around the first occurrence of a term, marked.

    The passage starts and ends at whitespace where it can, shows ``…`` where it cuts the
    text, and has its whitespace collapsed. Without an occurrence (the match was in another
    field) it is the opening of `text`.
    """
    span = first_match(text, terms)
    start, end = span or (0, 0)
    room = max(width - (end - start), 0)
    lo = max(start - room // 3, 0)
    hi = min(end + room - (start - lo), len(text))
    if lo > 0 and (space := _SPACE.search(text, lo, start)) is not None:
        lo = space.end()
    if hi < len(text):
        spaces = [m.start() for m in _SPACE.finditer(text, end, hi)]
        hi = spaces[-1] if spaces else hi
    marked = text[start:end] if span is None else MARK_OPEN + text[start:end] + MARK_CLOSE
    passage = " ".join((text[lo:start] + marked + text[end:hi]).split())
    return (ELLIPSIS if lo > 0 else "") + passage + (ELLIPSIS if hi < len(text) else "")
