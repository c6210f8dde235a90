"""The commerce contract's conformance kit against our server, and against broken copies of it."""
