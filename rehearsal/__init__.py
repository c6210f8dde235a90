"""The rehearsal model: a deterministic, rule-based, bilingual stand-in for a language model.

It is a test double shipped for the demo and CI, not a language model. It speaks the OpenAI Chat
Completions wire protocol through an in-process ``httpx2`` transport, so the service reaches it
through the same gateway, SDK, validation and error code as any real provider; the worker injects
it (:func:`rehearsal_http_client`) when no provider is configured, and nothing else in the service
knows it exists. It sees only what a real model would see through the wire (the question, the plan,
earlier tool calls and their results, the compose/review context) and never reads a database or a
file; its rules live in one module per request kind: ``_plan``, ``_investigate``, ``_compose`` (with
``_evidence``) and ``_review``.
"""

from rehearsal._transport import RehearsalTransport, rehearsal_http_client, respond

__all__ = ["RehearsalTransport", "rehearsal_http_client", "respond"]
