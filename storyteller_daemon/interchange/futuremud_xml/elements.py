"""Reading and writing the elements of FutureMUD's XML formats, strictly.

A container holds only elements, each allowed tag at most once where the format says so; a value
element holds only text; an id is a positive integer that fits a bigint column. Anything else is
an `InterchangeError` naming the element and the offending value (`show` shortens a value for the
message). Text written back is checked against the characters XML can represent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from lxml import etree

from storyteller_daemon.errors import InterchangeError

# Ids are bigint columns in FutureMUD and in our schema.
_MAX_ID = 2**63 - 1
INTEGER = re.compile(r"[+-]?[0-9]+")
"""A whole number as the formats write it, sign allowed."""


def show(value: str) -> str:
    """A value quoted for an error message, shortened so a huge value cannot flood it."""
    return repr(value if len(value) <= 80 else value[:77] + "...")


def reject_stray_text(container: etree._Element, where: str) -> None:
    """Containers hold only elements; stray text is usually a value put in the wrong place."""
    for text in (container.text, *(child.tail for child in container)):
        if text and text.strip():
            raise InterchangeError(
                f"{where} holds stray text {show(text.strip())}; put each value in its own element."
            )


T = TypeVar("T")


def named_entries(
    element: etree._Element,
    entry_tag: str,
    parse: Callable[[etree._Element, int], T],
    name_of: Callable[[T], str],
) -> tuple[T, ...]:
    """The entries of a ``<ToolCalls>`` list element (``<McpServers>``, ``<AttentionRules>``...),
    each parsed by `parse` (given its 1-based position), in document order.

    Raises:
        InterchangeError: stray text, another element than `entry_tag`, or two entries with one
            name.
    """
    where = f"ToolCalls <{element.tag}>"
    reject_stray_text(element, where)
    found: list[T] = []
    for entry in element:
        if entry.tag != entry_tag:
            raise InterchangeError(
                f"{where} has an unexpected element <{entry.tag}>; expected <{entry_tag}>."
            )
        item = parse(entry, len(found) + 1)
        if any(name_of(other) == name_of(item) for other in found):
            raise InterchangeError(
                f"ToolCalls <{entry_tag}> <Name> value {name_of(item)!r} names more than one "
                f"<{entry_tag}>."
            )
        found.append(item)
    return tuple(found)


def leaf_text(element: etree._Element, where: str) -> str:
    """The text of a value element, which must not contain other elements."""
    if len(element):
        raise InterchangeError(f"{where} holds an element <{element[0].tag}>; expected only text.")
    return element.text or ""


def parse_id(text: str, where: str) -> int:
    """The positive id that `text` (the value of the element `where`) holds."""
    value = text.strip()
    if INTEGER.fullmatch(value) is None:
        raise InterchangeError(f"{where} value {show(text)} is not a numeric id.")
    number = int(value)
    if number <= 0:
        raise InterchangeError(f"{where} value {show(text)} is not a positive id.")
    if number > _MAX_ID:
        raise InterchangeError(f"{where} value {show(text)} is too large to be an id.")
    return number


def single_children(
    container: etree._Element, allowed: tuple[str, ...], where: str
) -> dict[str, etree._Element]:
    """The container's children by tag, each allowed tag at most once."""
    found: dict[str, etree._Element] = {}
    for child in container:
        tag = str(child.tag)
        if tag not in allowed:
            expected = ", ".join(f"<{a}>" for a in allowed)
            raise InterchangeError(
                f"{where} has an unexpected element <{tag}>; expected {expected}."
            )
        if tag in found:
            raise InterchangeError(f"{where} has more than one <{tag}>.")
        found[tag] = child
    return found


def set_text(element: etree._Element, text: str, where: str, *, cdata: bool = False) -> None:
    """Write `text` into `element` (as CDATA when `cdata`), refusing what XML cannot hold."""
    try:
        element.text = etree.CDATA(text) if cdata else text
    except ValueError:
        bad = next((c for c in text if not _xml_char(c)), "?")
        raise InterchangeError(
            f"{where} holds U+{ord(bad):04X}, a character XML cannot represent."
        ) from None


def _xml_char(char: str) -> bool:
    code = ord(char)
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def serialise(root: etree._Element) -> str:
    """The document under `root` as pretty-printed text."""
    return etree.tostring(root, encoding="unicode", pretty_print=True)
