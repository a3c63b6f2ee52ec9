"""The prog type system: parameter types, signatures, JSON-schema mapping, conversion. Pure."""
