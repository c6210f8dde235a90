"""Where cases live and how to reach them: the Temporal target, the connection and the worker check."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, Interceptor
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from case_client._codes import ClientErrorCode, WaitCode
from case_client._pollers import describe_pollers
from case_tracing import client_interceptors
from contracts.errors import ConfigurationError, TransientError
from contracts.names import TASK_QUEUE
from contracts.payload_codec import CASE_DATA_CONVERTER

RPC_TIMEOUT = timedelta(seconds=5)
WORKER_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class TemporalTarget:
    """Where cases live: server address, namespace and the task queue workers poll.

    ``connect_options`` holds what else Temporal's environment configuration says (API key, TLS, gRPC
    metadata); it is never printed or compared.
    """

    address: str = "localhost:7233"
    namespace: str = "default"
    task_queue: str = TASK_QUEUE
    connect_options: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] = os.environ, *, profile: str | None = None, config_file: str | None = None
    ) -> TemporalTarget:
        """Temporal's environment configuration (``temporalio.envconfig``: ``TEMPORAL_ADDRESS``,
        ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*``, ``TEMPORAL_PROFILE`` and the
        config file) plus ``SUPPORT_TASK_QUEUE``; what none of them sets keeps the defaults above.

        An empty ``TEMPORAL_*`` variable counts as unset: envconfig would read an empty
        ``TEMPORAL_API_KEY`` as "use TLS" and an empty certificate path as a directory, and a compose
        file or an env file passes empty values through."""
        given = {name: value for name, value in environ.items() if value != "" or not name.startswith("TEMPORAL_")}
        try:
            config = dict(
                ClientConfig.load_client_connect_config(profile, config_file=config_file, override_env_vars=given)
            )
        except RuntimeError as error:  # the bridge's ConfigError: an unknown profile, a malformed file
            file = given.get("TEMPORAL_CONFIG_FILE") or config_file
            fix = f"fix TEMPORAL_CONFIG_FILE={file} or unset it" if file else "fix the Temporal client configuration"
            raise ConfigurationError(
                ClientErrorCode.TEMPORAL_CONFIG,
                f"cannot load the Temporal client configuration ({one_line_error(error)}); {fix}",
            ) from None
        except OSError as error:  # a certificate or key path that cannot be read
            raise ConfigurationError(ClientErrorCode.TEMPORAL_TLS_FILE, _unreadable_tls_file(given, error)) from None
        address = config.pop("target_host", None)
        namespace = config.pop("namespace", None)
        return cls(
            address=str(address or cls.address),
            namespace=str(namespace or cls.namespace),
            task_queue=environ.get("SUPPORT_TASK_QUEUE") or cls.task_queue,
            connect_options=config,
        )


TLS_PATH_VARIABLES = (
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
)
_SNIPPET_LINE = re.compile(r"^\s*(\d+\s*)?\|")
"""A line of the source excerpt a TOML parse error quotes (``1 | text``, ``  |  ^``)."""


def one_line_error(error: BaseException) -> str:
    """``error``'s message on one line: a parse error's quoted excerpt dropped, the rest joined."""
    lines = [line.strip() for line in str(error).splitlines()]
    return "; ".join(line for line in lines if line and not _SNIPPET_LINE.match(line))


def _unreadable_tls_file(environ: Mapping[str, str], error: OSError) -> str:
    for name in TLS_PATH_VARIABLES:
        path = environ.get(name)
        if path and not os.path.isfile(path):
            return f"{name}={path}: no such readable file; point it at the PEM file or unset it"
    return f"cannot read a TLS file of the Temporal client configuration ({error.filename or error}); fix its path"


async def connect(
    target: TemporalTarget, *, interceptors: Sequence[Interceptor] | None = None, runtime: Runtime | None = None
) -> Client:
    """A client with the case data converter (pydantic JSON, large payloads compressed:
    :data:`contracts.payload_codec.CASE_DATA_CONVERTER`); an unreachable server is ``temporal_unavailable``.

    This is the one way the service connects to Temporal: the case client and worker.py use it.
    ``interceptors`` default to :func:`case_tracing.client_interceptors`: Temporal's tracing interceptor
    when the standard OTEL variables turn tracing on (docs/tracing.md), else none. A worker built on the
    client runs them too. A tracing misconfiguration is a :class:`ConfigurationError`. ``runtime`` is
    the Temporal runtime to use (default: the SDK's): the worker's serves Prometheus metrics
    (:mod:`activities.runtime.metrics_runtime`).
    """
    if interceptors is None:
        interceptors = client_interceptors()
    try:
        client = await Client.connect(
            target.address,
            namespace=target.namespace,
            data_converter=CASE_DATA_CONVERTER,
            interceptors=interceptors,
            runtime=runtime,
            **target.connect_options,
        )
    except RuntimeError as error:
        raise TransientError(
            ClientErrorCode.TEMPORAL_UNAVAILABLE,
            f"cannot reach Temporal at {target.address} ({one_line_error(error)}); start a server "
            "(make dev-server) or set TEMPORAL_ADDRESS",
        ) from None
    await _require_namespace(client, target)
    return client


async def _require_namespace(client: Client, target: TemporalTarget) -> None:
    """Refuse a namespace the server does not have (every later call would fail with "not found").

    Only a definite NOT_FOUND refuses: a key that may not describe namespaces (Temporal Cloud) is
    left to the calls the namespace's own permissions allow.
    """
    request = DescribeNamespaceRequest(namespace=target.namespace)
    try:
        await client.workflow_service.describe_namespace(request, timeout=RPC_TIMEOUT)
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise ConfigurationError(
                ClientErrorCode.NAMESPACE_UNKNOWN,
                f"TEMPORAL_NAMESPACE={target.namespace}: no such namespace on {target.address}; create it "
                f"(temporal operator namespace create --namespace {target.namespace}) or name an existing one",
            ) from None


async def live_poller_identities(client: Client, task_queue: str) -> list[str]:
    """Identities of the workers that polled ``task_queue`` (workflow or activity tasks) within
    :data:`case_client._pollers.POLLER_FRESH_SECONDS` (:func:`case_client._pollers.describe_pollers`)."""
    return sorted(p.identity for p in (await describe_pollers(client, task_queue)).live)


async def live_pollers(client: Client, task_queue: str) -> int:
    """How many distinct workers poll ``task_queue`` now."""
    return len(await live_poller_identities(client, task_queue))


async def require_worker(
    client: Client, task_queue: str, *, start_hint: str, grace_seconds: float = WORKER_GRACE_SECONDS
) -> None:
    """Raise ``worker_unavailable`` (one line, with how to start one) when no worker polls ``task_queue``.

    A worker that started a moment ago may not have polled yet, so an empty queue is asked again for
    up to ``grace_seconds`` before the answer stands.
    """
    deadline = now() + grace_seconds
    while await live_pollers(client, task_queue) == 0:
        if now() >= deadline:
            raise TransientError(
                WaitCode.WORKER_UNAVAILABLE,
                f"no worker polls task queue {task_queue!r} on {client.service_client.config.target_host} "
                f"(namespace {client.namespace}); start one: {start_hint}",
            )
        await asyncio.sleep(0.5)


def now() -> float:
    """The event loop's clock (deadlines of waits)."""
    return asyncio.get_running_loop().time()
