"""What a ``storyteller doctor`` check finds: ok, or a problem with its fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

OPENAI_BASE_URL = "https://api.openai.com/v1"
ENV_FILE_HINT = "the daemon's environment (under systemd: /etc/storyteller/storyteller.env)"


@dataclass(frozen=True)
class Finding:
    """The result of one check."""

    check: str
    ok: bool
    detail: str
    fix: str = ""


def ok(check: str, detail: str) -> Finding:
    """A check that passed."""
    return Finding(check, True, detail)


def problem(check: str, detail: str, fix: str) -> Finding:
    """A check that found something to fix."""
    return Finding(check, False, detail, fix)
