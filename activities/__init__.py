"""Activities: every piece of I/O the workflow delegates (model calls, tools, commerce, records)."""
