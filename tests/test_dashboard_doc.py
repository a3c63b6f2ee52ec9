"""docs/dashboard.md shows the screenshots the browser tests take, and they are in the checkout."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_picture_the_dashboard_doc_shows_is_there() -> None:
    text = (DOCS / "dashboard.md").read_text(encoding="utf-8")
    pictures = re.findall(r"!\[[^\]]*\]\((dashboard/[\w-]+\.png)\)", text)
    assert {"dashboard/overview.png", "dashboard/timeline.png", "dashboard/run.png"} <= set(
        pictures
    )
    assert "dashboard/costs.png" in pictures and "dashboard/overview-phone.png" in pictures
    for picture in pictures:
        data = (DOCS / picture).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000, picture
