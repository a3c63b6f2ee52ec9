"""``storyteller aisr``."""

from __future__ import annotations

import typer

app = typer.Typer(help="Reference documents: list, create, show, edit, restrict, search.", no_args_is_help=True)
