"""The commerce MCP server: transaction facts for the fictional merchants Qinghe and south.

It runs as its own process (stdio or Streamable HTTP), owns the commerce database and re-checks
every write itself. Nothing in it is real: merchants, customers, orders and receipts are fictional.
"""
