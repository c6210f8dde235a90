"""The customer's channel: a small HTTP service (Starlette) where a customer starts a conversation
with the support service, writes to it, reads its transcript and follows its progress as Server-Sent
Events, authenticated by a bearer credential (the directory's applicant tokens, or an outside
issuer's ID tokens); and a minimal web chat page on it.

``python -m customer_channel`` serves it; :func:`build_app` builds it for a test with the
:class:`Conversations` it is given (:class:`TemporalConversations` in production). It holds no
private key unless started with ``--demo-sign-in``, which signs the demo directory's customers' tokens
with the state dir's issuer key (a developer's machine only). docs/channel.md describes the API.
"""

from customer_channel.app import build_app, endpoints
from customer_channel.backend import CaseNotFound, Conversations, TemporalConversations
from customer_channel.config import ChannelConfig
from customer_channel.credentials import BearerVerifier

__all__ = [
    "BearerVerifier",
    "CaseNotFound",
    "ChannelConfig",
    "Conversations",
    "TemporalConversations",
    "build_app",
    "endpoints",
]
