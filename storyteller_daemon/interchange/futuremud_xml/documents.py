"""Parsing untrusted XML documents safely.

A document is capped at `MAX_XML_BYTES` before parsing, and the parser refuses any DOCTYPE as
soon as it meets one, so no entity is ever declared, expanded or fetched (XXE, billion laughs and
external DTDs all fail the same way); the network is never touched. `parse_document` returns the
root element or raises `InterchangeError`, a `MalformedXmlError` when the text is not well-formed
XML at all.
"""

from __future__ import annotations

import re

from lxml import etree

from storyteller_daemon.errors import InterchangeError

MAX_XML_BYTES = 1_000_000
"""The largest document, in encoded bytes, that any parser here accepts."""

# lxml's parser-target protocol is typed for both; in practice it passes str.
_Text = str | bytes
_LOCATION_SUFFIX = re.compile(r", line \d+, column \d+$")


class MalformedXmlError(InterchangeError):
    """The text is not well-formed XML (as opposed to well-formed but unsafe or invalid)."""


class _DoctypeRefusingBuilder:
    """A parser target that builds the element tree but refuses any DOCTYPE.

    lxml calls `doctype` when it reads ``<!DOCTYPE``, before the internal subset, so raising
    there stops the parse before a single entity is declared.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._builder = etree.TreeBuilder()

    def start(self, tag: _Text, attrib: dict[_Text, _Text]) -> None:
        self._builder.start(tag, attrib)

    def end(self, tag: _Text) -> None:
        self._builder.end(tag)

    def data(self, data: _Text) -> None:
        self._builder.data(data)

    def comment(self, text: _Text) -> None:
        """Comments carry nothing the formats use, so they are dropped."""

    def doctype(self, name: str, public_id: str | None, system_url: str | None) -> None:
        where = f" (external DTD {system_url!r})" if system_url else ""
        raise InterchangeError(
            f"{self._label} declares <!DOCTYPE {name}>{where}; "
            "DOCTYPE and entity declarations are not allowed."
        )

    def close(self) -> etree._Element | None:
        # lxml also calls close() after a failed parse; the tree is then incomplete, and
        # returning None lets the parse error itself propagate instead of the builder's.
        try:
            return self._builder.close()
        except AssertionError:
            return None


def _encode(document: str | bytes, label: str) -> tuple[bytes, str | None]:
    """The document's bytes, and the encoding that overrides any declaration in them."""
    if isinstance(document, bytes):
        data, encoding = document, None
    else:
        # Every character encodes to at least one byte: refuse huge text before copying it.
        if len(document) > MAX_XML_BYTES:
            raise InterchangeError(
                f"{label} is larger than the {MAX_XML_BYTES:,}-byte limit ({len(document):,} "
                "characters)."
            )
        try:
            data = document.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InterchangeError(
                f"{label} holds a character that cannot be encoded "
                f"({document[exc.start]!r} at position {exc.start})."
            ) from None
        # Text is already decoded, so any encoding declaration it carries no longer applies.
        encoding = "utf-8"
    if len(data) > MAX_XML_BYTES:
        raise InterchangeError(
            f"{label} is larger than the {MAX_XML_BYTES:,}-byte limit ({len(data):,} bytes)."
        )
    return data, encoding


def parse_document(document: str | bytes, label: str) -> etree._Element:
    """Parse an untrusted document into its root element, or raise `InterchangeError`."""
    data, encoding = _encode(document, label)
    parser = etree.XMLParser(
        encoding=encoding,
        target=_DoctypeRefusingBuilder(label),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_pis=True,
        collect_ids=False,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position
        reason = _LOCATION_SUFFIX.sub("", exc.msg or str(exc))
        raise MalformedXmlError(
            f"{label} is not well-formed XML at line {line}, column {column}: {reason}."
        ) from None
    except (etree.LxmlError, ValueError) as exc:
        raise InterchangeError(f"{label} could not be parsed: {exc}.") from None
    if not etree.iselement(root):
        raise InterchangeError(f"{label} has no root element.")
    return root


def is_blank(document: str | bytes) -> bool:
    """Whether the document holds nothing but white space."""
    return not document.strip()
