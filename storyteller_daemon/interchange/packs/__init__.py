"""Storyteller packs: TOML and Markdown directories read into validated domain objects.

`files` reads a pack directory (`read_pack`, `find_pack`, `list_packs`), `storytellers` reads one
``[[storyteller]]`` table, `tables` gives typed access to TOML tables with errors naming file and
key, and `contents` holds what a read pack is (`Pack`, `PackDocument`). Writing a pack into the
database is `storage.seeding`'s, which takes a `Pack` and never parses.
"""
