"""Data that ships with storyteller: the database migrations, the seed packs, the example config.

In a checkout they live at the top level (``migrations/``, ``seed/``, ``config.example.toml``);
an installed wheel carries the directories inside this package, read through
`importlib.resources`, and the example configuration under ``<prefix>/share/storyteller``.
"""

from __future__ import annotations

import sys
from importlib.resources import files
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]


def bundled_dir(name: str) -> Path:
    """The shipped directory `name` (``migrations``, ``seed``): the package's or the checkout's."""
    shipped = files(__name__) / name
    if shipped.is_dir():
        return Path(str(shipped))
    return _CHECKOUT / name


def example_config() -> Path:
    """``config.example.toml``: the checkout's, else the installed copy under share/storyteller."""
    checkout = _CHECKOUT / "config.example.toml"
    if checkout.is_file():
        return checkout
    return Path(sys.prefix) / "share" / "storyteller" / "config.example.toml"
