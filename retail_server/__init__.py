"""The retail tenant's commerce MCP server: the τ²-bench retail domain as a merchant's own server
(docs/evaluation.md)."""
