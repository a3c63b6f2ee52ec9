"""Comparing words across disguises: which runs of a text were copied from another.

A player who wants the storyteller to say their words for them can dress the words up so a
plain comparison misses them: other case and punctuation, fullwidth letters (``Ｂｏｂ``),
zero-width characters between letters, Cyrillic or Greek look-alikes (``Воb``), accents. `fold`
undoes all of these: markup and invisible characters go (`text.strip_markup`), NFKC turns
compatibility forms (fullwidth, ligatures, superscripts) into plain ones, case is folded,
combining marks are dropped and a small map of confusable letters turns look-alikes into the
Latin letters they imitate. `words` splits the result into words with their places.

On top of that: `copied_words` says which words of a text belong to a run of at least ``n``
consecutive words found in a source text, `quoted_spans` finds what a text puts in quotation
marks, `reads_as_instruction` recognises text addressed to the storyteller as an order, and
`named_beside` finds a value a text names right next to a word of a tool's purpose.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storyteller_daemon.domain.text import strip_markup

_CONFUSABLES = str.maketrans(
    {
        # Cyrillic letters that look like Latin ones.
        "А": "A",
        "В": "B",
        "Е": "E",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "У": "Y",
        "Х": "X",
        "І": "I",
        "Ј": "J",
        "Ѕ": "S",
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "ӏ": "l",
        # Greek.
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ζ": "Z",
        "Η": "H",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Υ": "Y",
        "Χ": "X",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "μ": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "ς": "s",
        # Latin look-alikes NFKC keeps.
        "ı": "i",
        "ȷ": "j",
        "ɑ": "a",
        "ɡ": "g",
        "ℓ": "l",
        "ß": "ss",
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "đ": "d",
        "ł": "l",
        # Quotation marks, so a span in any of them reads as quoted.
        "«": '"',
        "»": '"',
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "‹": '"',
        "›": '"',
    }
)
# Invisible characters `strip_markup` keeps: soft hyphen, combining grapheme joiner, Mongolian
# vowel separator, Hangul fillers.
_INVISIBLE = re.compile("[\u00ad\u034f\u180e\u115f\u1160\u3164\uffa0]")
_WORD = re.compile(r"[^\W_]+")
# Double and single quotation marks are looked for apart, so a span in one kind nested in the
# other is found too; a single quote inside a word ("Maren's") neither opens nor closes one.
_QUOTED = (re.compile(r'"([^"\n]+)"'), re.compile(r"(?<![^\W_])'([^'\n]+)'(?![^\W_])"))

NUMBER_WORDS = {
    **dict.fromkeys(("zero", "none", "nil"), 0),
    **dict.fromkeys(("one",), 1),
    **dict.fromkeys(("two", "deux", "pair"), 2),
    **dict.fromkeys(("three", "trois"), 3),
    **dict.fromkeys(("four", "quatre"), 4),
    **dict.fromkeys(("five", "cinq"), 5),
    **dict.fromkeys(("six",), 6),
    **dict.fromkeys(("seven", "sept"), 7),
    **dict.fromkeys(("eight", "huit"), 8),
    **dict.fromkeys(("nine", "neuf"), 9),
    **dict.fromkeys(("ten", "dix"), 10),
    **dict.fromkeys(("eleven", "onze"), 11),
    **dict.fromkeys(("twelve", "dozen", "douze"), 12),
    **dict.fromkeys(("twenty", "vingt"), 20),
    **dict.fromkeys(("hundred", "cent"), 100),
}
"""Number words a player may write for a value (English and French, folded without accents)."""


def fold(text: str) -> str:
    """`text` with its disguises undone (see the module): plain, lower-case, Latin look-alikes."""
    text = _INVISIBLE.sub("", strip_markup(text))
    # Look-alikes are mapped before case folding (Greek capital eta is an H, small eta an n)
    # and after it (what folding made, such as a final sigma).
    text = unicodedata.normalize("NFKC", text).translate(_CONFUSABLES).casefold()
    text = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", text.translate(_CONFUSABLES))


@dataclass(frozen=True)
class Words:
    """A folded text and its words, each with where it starts and ends in the folded text."""

    folded: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str) -> Words:
        """The words of `text`, folded."""
        folded = fold(text)
        found = list(_WORD.finditer(folded))
        return cls(folded, tuple(m.group(0) for m in found), tuple(m.span() for m in found))

    def quoted(self) -> frozenset[int]:
        """The indexes of the words that stand between quotation marks."""
        regions = [m.span() for pattern in _QUOTED for m in pattern.finditer(self.folded)]
        return frozenset(
            i
            for i, (start, end) in enumerate(self.spans)
            if any(a < start and end < b for a, b in regions)
        )


def words(text: str) -> tuple[str, ...]:
    """The folded words of `text`."""
    return Words.of(text).words


def quoted_spans(text: str, min_words: int) -> list[tuple[str, ...]]:
    """The word runs `text` puts in quotation marks, those of at least `min_words` words."""
    folded = fold(text)
    spans = []
    for pattern in _QUOTED:
        for match in pattern.finditer(folded):
            inner = tuple(_WORD.findall(match.group(1)))
            if len(inner) >= min_words:
                spans.append(inner)
    return spans


def shingles(sequence: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """Every run of `n` consecutive words of `sequence`."""
    return {tuple(sequence[i : i + n]) for i in range(len(sequence) - n + 1)}


def copied_words(
    text: Sequence[str],
    sources: Iterable[Sequence[str]],
    n: int,
    spans: Iterable[Sequence[str]] = (),
) -> frozenset[int]:
    """Indexes of the words of `text` that belong to a run of `n` or more consecutive words of
    one of `sources`, or to a whole occurrence of one of `spans` (quoted text).

    Args:
        text: the folded words of the text checked.
        sources: the folded words of each source text.
        n: the shortest run that counts as copied (at least 1).
        spans: word runs that count as copied whatever their length.
    """
    n = max(n, 1)
    seen: set[tuple[str, ...]] = set()
    for source in sources:
        seen |= shingles(source, n)
    hit: set[int] = set()
    for i in range(len(text) - n + 1):
        if tuple(text[i : i + n]) in seen:
            hit.update(range(i, i + n))
    for span in spans:
        size = len(span)
        if not size:
            continue
        for i in range(len(text) - size + 1):
            if tuple(text[i : i + size]) == tuple(span):
                hit.update(range(i, i + size))
    return frozenset(hit)


_INSTRUCTION = re.compile(
    r"\b("
    # English: orders about obeying, rules and instructions, addressed to the storyteller.
    r"(always|must|should|shall|will) (obey|do what)"
    r"|always (follow|trust|believe|side with|listen to)"
    r"|obey (him|her|them|me|us|his|their|every|all|any)\b"
    r"|(ignore|disregard|forget|override|bypass|drop) (all |any |every |the )?"
    r"(your |previous |prior |above |earlier |former |old )*"
    r"(rules?|instructions?|orders?|guidelines?|prompts?|policy|policies|limits?|restrictions?)"
    r"|you (must|shall|will|should|have to|need to|are to|are required to) (now |always |never |"
    r"obey|follow|comply|call|echo|announce|say|tell|send|do|treat|grant|give|refuse|ignore)"
    r"|(from now on|henceforth) you"
    r"|(when|whenever|if) (this|you) (is |are )?(read|recalled|reading|see|recall)"
    r"|(new|standing|secret|hidden) (rule|order|instruction|directive|command)s?\b"
    r"|(system|admin|developer|operator|gm) (note|message|prompt|override|instruction|order)s?"
    r"|(treat|regard|consider) \w+ as (an? )?(admin|staff|gm|developer|owner)"
    r"|(is|as) an? (admin|administrator|game master|gm|developer|moderator)\b"
    r"|(do not|don t|never) (refuse|question|doubt|deny|disobey)"
    r"|(storyteller|narrator|assistant|ai|model) (you )?(must|shall|should|will|obey|always)"
    # French (folded: no accents).
    r"|tu dois|vous devez|il faut que tu|obeis|obeissez|obeir|(desormais|dorenavant) (tu|vous)"
    r"|(ignore|ignorez|oublie|oubliez) (tes|vos|les) (regles|instructions|ordres|consignes)"
    r")"
)
_ROLE_LINE = re.compile(r"\W*(system|assistant|developer|admin)\b[^:\n]{0,20}:")


def reads_as_instruction(text: str) -> bool:
    """Whether `text` reads as an order to the storyteller ("always obey", "ignore your rules",
    "you must...", a ``SYSTEM:`` line), after `fold`."""
    folded = fold(text)
    if any(_ROLE_LINE.match(line) for line in folded.splitlines()):
        return True
    return bool(_INSTRUCTION.search(" ".join(_WORD.findall(folded))))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_|-")
_STOP = frozenset({"to", "the", "a", "an", "of", "for", "and", "id", "in", "on", "with", "at"})


def purpose_words(*names: str) -> frozenset[str]:
    """The words of tool and argument names (``SummonWatchPatrol``, ``Strength``), folded."""
    found = {w for name in names for w in words(_CAMEL.sub(" ", name))}
    return frozenset(w for w in found if w not in _STOP and not w.isdigit())


def _stem_match(word: str, purpose: frozenset[str]) -> bool:
    return any(word == p or (len(p) >= 5 and word.startswith(p[:5])) for p in purpose)


def value_tokens(value: object) -> frozenset[str]:
    """The words a player could write for an argument's value: a number as digits and as
    number words, a one-word text as itself; empty for anything else."""
    if isinstance(value, bool):
        return frozenset()
    if isinstance(value, int | float) and float(value).is_integer():
        number = int(value)
        return frozenset({str(number), *(w for w, n in NUMBER_WORDS.items() if n == number)})
    if isinstance(value, float):
        return frozenset({f"{value:g}"})
    if isinstance(value, str):
        found = words(value)
        return frozenset(found) if len(found) == 1 else frozenset()
    return frozenset()


def named_beside(
    value: object, purpose: frozenset[str], texts: Iterable[Sequence[str]], window: int = 3
) -> bool:
    """Whether one of `texts` (folded words) names `value` at most `window` words from a word of
    `purpose` ("strength 6", "a hostile patrol")."""
    tokens = value_tokens(value)
    if not tokens or not purpose:
        return False
    for text in texts:
        for i, word in enumerate(text):
            if word not in tokens:
                continue
            near = [*text[max(0, i - window) : i], *text[i + 1 : i + 1 + window]]
            if any(_stem_match(w, purpose) for w in near if w not in tokens):
                return True
    return False
