"""storyteller: an AI storyteller daemon for MUD worlds."""

__version__ = "0.1.0"
