"""The commerce room: calls to the commerce MCP server and the activities that make them.

The client (:mod:`.commerce_client`), the worker's sessions to it over stdio (:mod:`.commerce_sessions`)
or HTTP (:mod:`.commerce_http`), and the activities that read (:mod:`.tool_activities`) and write
(:mod:`.settlement`) through them.
"""
