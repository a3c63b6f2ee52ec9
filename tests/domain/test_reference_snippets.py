"""Snippets of search hits: the passage around the first match, marked, cut at whitespace."""

from __future__ import annotations

from storyteller_daemon.domain.references import SNIPPET_WIDTH, first_match, snippet

LONG = " ".join(f"word{i}" for i in range(100))


def test_the_first_occurrence_of_any_term_is_marked() -> None:
    text = "The Harbourmaster and the Fishers' Guild feud over berths."
    assert snippet(text, ["guild", "harbour"]) == (
        "The «Harbour»master and the Fishers' Guild feud over berths."
    )
    assert (
        snippet(text, ["GUILD"]) == "The Harbourmaster and the Fishers' «Guild» feud over berths."
    )


def test_of_two_terms_starting_together_the_longer_is_marked() -> None:
    assert first_match("harbourmaster", ["harbour", "harbourmaster"]) == (0, 13)


def test_a_long_text_is_cut_at_whitespace_around_the_match() -> None:
    cut = snippet(LONG, ["word50"])
    assert cut.startswith("…word") and cut.endswith("…")
    assert "«word50»" in cut
    assert "word49 «word50» word51" in cut
    assert len(cut) <= SNIPPET_WIDTH + len("«»…") * 2


def test_without_a_match_in_the_contents_the_opening_is_shown() -> None:
    assert snippet(LONG, ["elsewhere"]).startswith("word0 word1 ")
    assert snippet(LONG, []).endswith("…")
    assert snippet("", ["x"]) == ""
    assert snippet("Short and sweet.", []) == "Short and sweet."


def test_whitespace_is_collapsed() -> None:
    assert snippet("The\n\nquay   at\tdawn.", ["quay"]) == "The «quay» at dawn."


def test_case_folding_that_changes_length_marks_the_original_characters() -> None:
    text = "Die Straße der Möwen"
    assert first_match(text, ["STRASSE"]) == (4, 10)
    assert snippet(text, ["möwen"]) == "Die Straße der «Möwen»"
    assert snippet("ǅemal ǅemal and the quay", ["QUAY"]) == "ǅemal ǅemal and the «quay»"
