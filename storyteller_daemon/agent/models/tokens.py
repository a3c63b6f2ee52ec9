"""Counting a prompt's tokens before it is sent, without the model's tokenizer.

The providers' tokenizers are byte-pair encodings whose tables are downloaded at run time, so
the daemon estimates instead, behind one function type (`TokenCounter`): a real tokenizer
wrapped in a function of the same shape can replace `estimate_tokens` wherever a counter is
taken. The estimate is meant to err high, so a prompt kept under a budget by it is under the
budget by the real count too:

* a run of ASCII letters costs one token per 4 letters, rounded up (English averages 4 to 6
  characters per token, a common word is one token);
* a run of digits costs one per 3 digits (the encodings split numbers in groups of three);
* a run of ASCII punctuation costs one per 2 characters (``":"`` or ``",`` are often one);
* every other character (accented letters, CJK, emoji) costs one, and one more outside the
  Basic Multilingual Plane;
* a single space before a word is free (encodings fold it into the word); longer runs of
  spaces and each run of line breaks cost one.

Pieces never cross a line break, so the estimate of blocks joined by blank lines is the sum
of their estimates plus one per join; prompt assembly relies on that (`agent.context`).

A floor is the opposite case: `characters_holding` says how much prose surely reaches a token
count, so it errs long (the attention examples that bring instructions up to the provider's
prompt-cache floor are sized by it).

Money needs a bound, not an estimate: `input_estimate` counts a whole request at one token per
byte of its body (no token is shorter than a byte), which the budgets reserve before a request
goes and the ledger bills for a request the provider got but did not answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from storyteller_daemon.agent.models.interface import ModelRequest, api_body

TokenCounter = Callable[[str], int]
"""Estimated (or exact) tokens of a text; what a prompt budget is measured with."""

_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"[0-9]+")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")
_LINE_BREAKS = re.compile(r"\n+")
_SPACES = re.compile(r"[^\S\n]{2,}")
_OTHER = re.compile(r"[^\x00-\x7f]")


def estimate_tokens(text: str) -> int:
    """An estimate of `text`'s tokens that errs high (see the module docstring)."""
    if text.isascii():
        other = 0
    else:
        other = sum(2 if ord(c) > 0xFFFF else 1 for c in _OTHER.findall(text))
    return (
        sum((len(w) + 3) // 4 for w in _LETTERS.findall(text))
        + sum((len(d) + 2) // 3 for d in _DIGITS.findall(text))
        + sum((len(p) + 1) // 2 for p in _PUNCTUATION.findall(text))
        + len(_LINE_BREAKS.findall(text))
        + len(_SPACES.findall(text))
        + other
    )


PROSE_CHARS_PER_TOKEN = 4.5
"""Characters of English prose counted per token when a length must reach a token count:
above the usual four, so the count is reached."""


def characters_holding(tokens: int) -> int:
    """Characters of English prose that hold at least `tokens` tokens (errs long)."""
    return int(tokens * PROSE_CHARS_PER_TOKEN)


def input_estimate(request: ModelRequest) -> int:
    """The request's input tokens at most: its body's UTF-8 size (no token is shorter than a
    byte)."""
    return len(json.dumps(api_body(request), ensure_ascii=False).encode("utf-8"))


def cut_to_tokens(
    text: str, max_tokens: int, marker: str, count: TokenCounter = estimate_tokens
) -> str:
    """The longest start of `text` that, with `marker` after it, counts at most `max_tokens`.

    Returns `text` itself when it fits, and `marker` alone (or "") when nothing else does. The
    cut backs off to the last line break or space within 40 characters, so it rarely splits a
    word.
    """
    if count(text) <= max_tokens:
        return text
    if count(marker) > max_tokens:
        return ""
    low, high = 0, len(text)
    while low < high:  # the largest length whose cut fits; a longer start never counts less
        middle = (low + high + 1) // 2
        if count(text[:middle].rstrip() + marker) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    pause = max(head.rfind("\n"), head.rfind(" "))
    if pause > 0 and low - pause <= 40:
        head = head[:pause]
    return head.rstrip() + marker
