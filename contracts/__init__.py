"""Shared contracts: the pydantic models and error classes used on both sides of every boundary.

Workflows, activities, the commerce MCP server, the knowledge base and the command line all import
their payload types from here, so that each contract is defined exactly once.
"""
