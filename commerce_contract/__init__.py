"""The commerce contract's conformance kit: ``python -m commerce_contract``.

A merchant who implements the commerce MCP server (docs/commerce-contract.md) runs this kit against
their own server, over stdio or Streamable HTTP, with the key material their server was configured
with. Each check sends real calls through the MCP SDK client and states one line: passed or failed, and
why. The kit PAYS (simulated) refunds on the target server: one refund of the fixture's refundable
order per run, each run on fresh case ids.
"""
