"""Helpers for workflow tests."""

from __future__ import annotations

import base64
import json


def history_text(history) -> str:
    """Every string in a workflow history, with JSON payloads decoded (they are base64 on the wire)."""
    parts: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, str) and "metadata" in node:
                try:
                    parts.append(base64.b64decode(data).decode("utf-8", "replace"))
                except ValueError:
                    parts.append(data)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            parts.append(node)

    walk(json.loads(history.to_json()))
    return "\n".join(parts)
