"""Finding and redacting one character's texts and id in stored values, JSON included.

Erasing a character must reach every copy of their words: the speech history keeps them
cleaned, a prompt fences them with markup stripped and whitespace folded, a request body holds
the prompt as a JSON string, and a tool's output inside that body is JSON in a JSON string (two
levels of escaping). `Redactor` therefore looks for each text in all of these forms:

* the text as given, stripped of markup (with and without engine colour codes), and folded onto
  one line, each trimmed;
* each of those JSON-escaped one, two and three times, with and without ``\\uXXXX`` escapes.

A match is case-insensitive and must not sit inside a longer word (``Wren`` does not match in
``Wrenfield``), so a short name does not eat other words; the letter of an escape sequence
(``\\nWren``) does not count as part of a word. A name is looked for when it has at least
`MIN_NAME_CHARS` letters or digits, any other text when it is at least `MIN_TEXT_CHARS` long
(`worth_finding`): a short line ("Yes.") identifies nobody, and looking for it would redact it
in everyone's words.

A stored value that is a JSON object or array is parsed and walked, so a replacement can never
break it: strings are redacted (recursively, when a string is itself a JSON document, as a tool
output is), and an integer equal to the character id under a key that names a character
(`names_character`) becomes `ERASED_ID`, or is dropped from a list of ids; in the document's
text, ``#id`` (as prompts name characters: ``Speaker: "Osric" [#1002]``) becomes ``#0`` too,
so a room of the same number named that way is redacted as well. A world event inside
a document (an object with a ``cursor`` and a ``kind``) whose speaker or source is the
character has its text replaced whatever its length, and one aimed at the character loses the
target's description. The document is written back in its own style (compact or spaced,
``\\u`` escapes or not) only if it changed. Everything else is plain text, in which every form
is replaced by the marker.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from storyteller_daemon.domain.text import one_line, strip_markup

MARKER = "[erased]"
"""What an erased text is replaced with."""
ERASED_ID = 0
"""What an erased character id becomes in a JSON document: world ids are positive, so it names
nobody, and the document still has an integer where its readers expect one."""
_REMEMBERED_CHARS = 1000
_REMEMBERED_VALUES = 20_000
MIN_NAME_CHARS = 3
MIN_TEXT_CHARS = 8
ESCAPE_LEVELS = 3

_WORD = re.compile(r"\w")
# A match may start after a non-word character, or after the letter of an escape sequence
# (``\n``, ``\t``, ``\u00e9``) in text that is JSON-escaped but not parsed (a cut-off preview).
# (Checked after the first letter, so that every branch of the pattern starts with a literal
# and the search can skip ahead to the letters that may begin a match.)
_LEFT = r"(?:(?<!\w.)|(?<=\\[nrtbf].)|(?<=\\u[0-9a-fA-F]{4}.))"
_RIGHT = r"(?!\w)"

_OTHER_IDS = (
    "room",
    "cell",
    "zone",
    "location",
    "memory",
    "situation",
    "run",
    "storyteller",
    "document",
    "crime",
    "approval",
    "tool",
    "ledger",
    "response",
    "call",
    "prog",
    "calendar",
    "landmark",
    "item",
    "request",
    "message",
)
# World events (`world_adapter.codec` form): the id field naming who acted or was addressed, and
# the text fields that are then that character's own.
_EVENT_TEXTS = {
    "speech": (("speaker_id", ("text", "speaker_name")), ("target_id", ("target_description",))),
    "room_echo": (("source_character_id", ("text",)),),
}
_CHARACTER_WORDS = frozenset(
    {"character", "characters", "involved", "speaker", "target", "victim", "criminal", "player"}
)


@functools.lru_cache(maxsize=4096)
def names_character(key: str) -> bool:
    """Whether a JSON key may hold a character's id: ``id``, ``speaker_id``, ``CharacterId``,
    ``OriginCharacterId``, ``involved``, ``Target``… but not ``room_id``, ``MemoryId``,
    ``LocationId`` and other ids of things that are not characters."""
    word = re.sub(r"[^a-z]", "", key.lower())
    if any(other in word for other in _OTHER_IDS):
        return False
    return word in _CHARACTER_WORDS or word.endswith(("id", "ids"))


def worth_finding(text: str, *, name: bool = False) -> bool:
    """Whether a text is long enough to look for elsewhere (see the module docstring)."""
    text = text.strip()
    if name:
        return len(_WORD.findall(text)) >= MIN_NAME_CHARS
    return len(text) >= MIN_TEXT_CHARS and len(_WORD.findall(text)) >= MIN_NAME_CHARS


def text_forms(text: str) -> set[str]:
    """Every form in which `text` may be stored (see the module docstring)."""
    plain = {
        text,
        strip_markup(text),
        strip_markup(text, colour_codes=False),
        one_line(text),
        one_line(text, colour_codes=False),
    }
    found = {p.strip() for p in plain}
    found = {f for f in found if worth_finding(f, name=True) and f.lower() not in MARKER.lower()}
    # Matching ignores case, but a ``\u`` escape spells a letter's case in its digits.
    found |= {v for f in found if not f.isascii() for v in (f.lower(), f.upper(), f.title())}
    level = set(found)
    for _ in range(ESCAPE_LEVELS):
        level = {json.dumps(f, ensure_ascii=a)[1:-1] for f in level for a in (False, True)}
        found |= level
    return found


def _trie(words: Iterable[str]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return root


def _trie_pattern(node: dict[str, Any], after_first: str = "") -> str:
    """A regular expression matching exactly the words of a trie, longest first
    (`after_first` is put after the first letter of each)."""
    parts = []
    for char in sorted(k for k in node if k):
        run, child = [char], node[char]
        while len(child) == 1 and "" not in child:  # a chain of single letters: one literal
            (char,) = child
            run.append(char)
            child = child[char]
        head, rest = re.escape(run[0]) + after_first, re.escape("".join(run[1:]))
        parts.append(head + rest + _trie_pattern(child))
    if not parts:
        return ""
    body = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
    if "" in node:
        return f"(?:{body})?"
    return body


def _pattern(forms: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern for all forms, in four groups by whether each end is a word character."""
    groups: dict[tuple[bool, bool], set[str]] = {}
    for form in forms:
        key = (bool(_WORD.match(form[0])), bool(_WORD.match(form[-1])))
        groups.setdefault(key, set()).add(form.lower())
    if not groups:
        return None
    alternatives = []
    for (left, right), words in sorted(groups.items()):
        body = _trie_pattern(_trie(words), _LEFT if left else "")
        alternatives.append(f"(?:{body})" + (_RIGHT if right else ""))
    return re.compile("|".join(alternatives), re.IGNORECASE)


def _dump_like(value: Any, parsed: Any, original: str) -> str:
    """`value` as JSON in the style of `original`, which `parsed` was read from (compact or
    spaced; ``\\u`` escapes or not)."""
    ascii_only = original.isascii()
    for style in ({"separators": (",", ":")}, {}, {"indent": 2}):
        if json.dumps(parsed, ensure_ascii=ascii_only, **style) == original:
            return json.dumps(value, ensure_ascii=ascii_only, **style)
    return json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))


class Redactor:
    """Finds and replaces one character's texts and id in stored values.

    Args:
        texts: the character's texts (speech, memories, names...); blank and short ones are
            left out.
        character_id: the character's world id (JSON documents only), or None.
        marker: what a text is replaced with.
    """

    def __init__(
        self, texts: Iterable[str], character_id: int | None, *, marker: str = MARKER
    ) -> None:
        texts = tuple(texts)
        forms: set[str] = set()
        for text in texts:
            forms |= text_forms(text)
        self.forms = frozenset(forms)
        self._pattern = _pattern(forms)
        # The same pattern, case-sensitive, for lower-cased values: twice as fast to search.
        self._lower = re.compile(self._pattern.pattern) if self._pattern is not None else None
        self._id = character_id
        self._marker = marker
        self._number = (
            re.compile(rf"(?<=#){character_id}(?!\d)") if character_id is not None else None
        )
        self._digits = str(character_id) if character_id is not None else None
        # Search terms a turn derived from the character's words (the memory ranking's
        # `words` argument on a run's tape) hold those words one by one, so no whole text
        # matches them: each is dropped from such a list.
        self._words = frozenset(
            word for text in texts for word in _TERM.findall(text.lower()) if len(word) >= 3
        )
        # Run records repeat the same strings (tool schemas in every request): remember them.
        self._seen: dict[tuple[str, bool], tuple[str, bool]] = {}

    def scrub(self, value: str) -> tuple[str, list[str]]:
        """`value` redacted, and where it changed: ``$`` for plain text, JSON paths such as
        ``$.turn.calls[0].arguments.Details`` inside a document (empty: unchanged)."""
        if not self._may_hold(value):
            return value, []
        found: list[str] = []
        return self._string(value, "$", found, in_document=False), found

    def _may_hold(self, value: str) -> bool:
        """Whether `value` may mention the character at all: every stored form of a text is
        among the pattern's, and an id is written in its digits, so one search of the raw
        value decides for most values, JSON documents included."""
        if self._digits is not None and self._digits in value:
            return True
        return self._lower is not None and self._lower.search(value.lower()) is not None

    def _string(self, value: str, path: str, found: list[str], *, in_document: bool) -> str:
        if value.lstrip()[:1] in ("{", "["):
            try:
                document = json.loads(value)
            except ValueError:
                document = None
            if isinstance(document, dict | list):
                inner: list[str] = []
                changed = self._node(document, path, inner)
                if not inner:
                    return value
                found.extend(inner)
                return _dump_like(changed, document, value)
        remembered = self._seen.get((value, in_document))
        if remembered is None:
            redacted, count = value, 0
            if self._pattern is not None:
                redacted, count = self._pattern.subn(self._marker, redacted)
            if in_document and self._number is not None:
                redacted, numbers = self._number.subn(str(ERASED_ID), redacted)
                count += numbers
            remembered = redacted, count > 0
            if len(value) <= _REMEMBERED_CHARS:
                if len(self._seen) >= _REMEMBERED_VALUES:
                    self._seen.clear()
                self._seen[value, in_document] = remembered
        if remembered[1]:
            found.append(path)
        return remembered[0]

    def _is_id(self, value: Any) -> bool:
        return self._id is not None and type(value) is int and value == self._id

    def _owned_texts(self, node: dict[Any, Any]) -> set[str]:
        """The text fields of a world event that are the character's own words or names."""
        if "cursor" not in node or self._id is None:
            return set()
        owned: set[str] = set()
        for id_key, text_keys in _EVENT_TEXTS.get(str(node.get("kind")), ()):
            if self._is_id(node.get(id_key)):
                owned.update(text_keys)
        return owned

    def _node(self, node: Any, path: str, found: list[str]) -> Any:
        if isinstance(node, str):
            return self._string(node, path, found, in_document=True)
        if isinstance(node, list):
            return [self._node(v, f"{path}[{i}]", found) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        owned = self._owned_texts(node)
        result: dict[Any, Any] = {}
        for key, value in node.items():
            where = f"{path}.{key}"
            if key in owned and isinstance(value, str) and value and value != self._marker:
                found.append(where)
                result[key] = self._marker
                continue
            if names_character(key):
                if self._is_id(value):
                    found.append(where)
                    value = ERASED_ID
                elif isinstance(value, list) and any(self._is_id(v) for v in value):
                    found.append(where)
                    value = [v for v in value if not self._is_id(v)]
            if key in _DERIVED_WORD_KEYS and isinstance(value, list):
                kept = [v for v in value if not (isinstance(v, str) and v.lower() in self._words)]
                if len(kept) < len(value):
                    found.append(where)
                    value = kept
            new_key = self._string(key, where, found, in_document=False)
            result[new_key] = self._node(value, where, found)
        return result


_TERM = re.compile(r"\w+")
_DERIVED_WORD_KEYS = frozenset({"words"})
"""Keys of JSON lists of search terms taken from text (see `Redactor`)."""
_NAME_KEYS = frozenset({"name", "shortdescription", "speakername", "targetdescription"})
_TEXT_KEYS = frozenset({"fulldescription", "description", "text"})


def _key_word(key: str) -> str:
    return re.sub(r"[^a-z]", "", key.lower())


def character_texts(document: Any, character_id: int) -> tuple[set[str], set[str]]:
    """The character's names and texts that a stored JSON document holds: (names, texts).

    They come from world events in which the character speaks or acts (their words, their name
    as spoken, their description as others saw it when addressed) and from descriptions of the
    character the world gave (an object whose ``id`` or ``character_id`` is theirs, with its
    ``name``, ``short_description``, ``full_description``), at any depth, JSON inside strings
    included.
    """
    names: set[str] = set()
    texts: set[str] = set()

    def take(key: str, value: Any) -> None:
        if isinstance(value, str):
            (names if _key_word(key) in _NAME_KEYS else texts).add(value)

    def visit(node: Any) -> None:
        if isinstance(node, str):
            if node.lstrip()[:1] in ("{", "["):
                try:
                    visit(json.loads(node))
                except ValueError:
                    return
            return
        if isinstance(node, list):
            for item in node:
                visit(item)
            return
        if not isinstance(node, dict):
            return
        if "cursor" in node:
            for id_key, text_keys in _EVENT_TEXTS.get(str(node.get("kind")), ()):
                if node.get(id_key) == character_id and type(node.get(id_key)) is int:
                    for key in text_keys:
                        take(key, node.get(key))
        own = any(
            _key_word(k) in ("id", "characterid") and type(v) is int and v == character_id
            for k, v in node.items()
        )
        if own and any(_key_word(k) == "name" for k in node):
            for key, value in node.items():
                if _key_word(key) in _NAME_KEYS | _TEXT_KEYS:
                    take(key, value)
        for value in node.values():
            visit(value)

    visit(document)
    return names, texts
