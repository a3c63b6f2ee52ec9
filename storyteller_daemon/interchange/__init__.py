"""Import and export of storage formats shared with other engines (FutureMUD XML)."""
