"""Documents from outside read into domain objects and written back: FutureMUD's XML formats
(`futuremud_xml`) and storyteller packs (`packs`). Nothing here touches the database."""
