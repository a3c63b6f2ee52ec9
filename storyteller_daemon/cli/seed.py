"""``storyteller seed``."""

from __future__ import annotations

import typer

app = typer.Typer(help="Example storyteller packs: list and load.", no_args_is_help=True)
