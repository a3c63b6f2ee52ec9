"""Work the daemon does on a schedule: fuzzy heartbeats and the approved-call runner."""
