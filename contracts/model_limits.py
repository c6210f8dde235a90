"""Limits that the model settings (activities) and the model activities' options (workflow) share."""

from __future__ import annotations

MAX_MODEL_TIMEOUT_SECONDS = 600.0
"""The longest per-request timeout an operator may set (``SUPPORT_MODEL_TIMEOUT_SECONDS``): a slow CPU
server answered one compose request in 128 s with one thread."""

MODEL_ACTIVITY_MARGIN_SECONDS = 30.0
"""What a model activity may take beyond its request: reading and validating the reply. The model
activities' start-to-close timeout is :data:`MAX_MODEL_TIMEOUT_SECONDS` plus this, so that a slow reply
is always the gateway's own timeout (reported as such, with the model's name), never Temporal's."""
