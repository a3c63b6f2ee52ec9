"""The storyteller's tools: built-ins (one module per concept), custom prog tools, the registry."""
