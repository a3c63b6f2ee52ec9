"""Import and export of FutureMUD's storyteller XML formats.

Three formats are covered, as FutureMUD stores them:

* the surveillance definition (``<Definition>`` with ``<Zones>``, ``<IncludedCells>`` and
  ``<ExcludedCells>``);
* the custom tool blob (``<ToolCalls>``), which also carries the speech-context settings, the
  custom player-information prog and (our additions, see `render_tool_calls`) the attention rules
  and the MCP grants;
* a reference document's storyteller restrictions: a CSV of ids, or the legacy XML form with
  ``<Storyteller>`` elements.

Imported documents are untrusted. They are capped at `MAX_XML_BYTES` before parsing, and the parser
refuses any DOCTYPE as soon as it meets one, so no entity is ever declared, expanded or fetched
(XXE, billion laughs and external DTDs all fail the same way). The network is never touched.

FutureMUD skipped or silently repaired bad entries on load; this importer rejects them instead,
with an `InterchangeError` that names the element and the offending value.

The package's modules: `documents` (safe parsing of an untrusted document), `elements` (strict
reading and writing of elements), `durations`, and one module per format: `surveillance`,
`tool_calls` (with `rules` and `mcp`, the attention rules and MCP grants inside the blob) and
`restrictions`.
"""

from storyteller_daemon.interchange.futuremud_xml.documents import MAX_XML_BYTES
from storyteller_daemon.interchange.futuremud_xml.restrictions import parse_restrictions
from storyteller_daemon.interchange.futuremud_xml.surveillance import (
    parse_surveillance,
    render_surveillance,
)
from storyteller_daemon.interchange.futuremud_xml.tool_calls import (
    ToolCallsDefinition,
    apply_tool_calls,
    parse_tool_calls,
    render_tool_calls,
)

__all__ = [
    "MAX_XML_BYTES",
    "ToolCallsDefinition",
    "apply_tool_calls",
    "parse_restrictions",
    "parse_surveillance",
    "parse_tool_calls",
    "render_surveillance",
    "render_tool_calls",
]
