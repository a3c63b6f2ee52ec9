"""What several commands print or parse alike: storytellers, documents, runs, characters, the
prog catalogue and the live console of a running daemon. No command lives here."""
