"""Optional OpenTelemetry tracing: one trace per case, off unless the standard OTEL variables ask for it.

On when ``OTEL_TRACES_EXPORTER`` names ``otlp`` and/or ``console`` or, with it unset, when
``OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT`` names a collector; ``OTEL_TRACES_EXPORTER=none`` and
``OTEL_SDK_DISABLED=true`` turn it off, ``OTEL_SERVICE_NAME`` names the service, OTLP speaks
``http/protobuf``. Off, the OpenTelemetry SDK is never imported and no interceptor or exporter exists.
Spans: Temporal's ``TracingInterceptor`` (client, workflow, activities) and the worker's
``activities.commerce.commerce_sessions.TracedCommerce`` (``commerce <tool>``), whose context the MCP SDK carries
to the commerce server. See docs/tracing.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from contracts.errors import ConfigurationError, SettingCode

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer
    from temporalio.client import Client, Interceptor
    from temporalio.contrib.opentelemetry import TracingInterceptor


DEFAULT_SERVICE_NAME = "qinghe-support-cases"
EXPORTERS = ("otlp", "console", "none")
PROTOCOL = "http/protobuf"
CONFIG_CODE = SettingCode.TRACING_CONFIG


@dataclass(frozen=True)
class Tracing:
    """A tracer provider, the tracer the service's spans use and Temporal's interceptor on that tracer."""

    provider: TracerProvider
    tracer: Tracer
    interceptor: TracingInterceptor
    exporters: tuple[SpanExporter, ...] = ()

    @classmethod
    def for_provider(cls, provider: TracerProvider, exporters: tuple[SpanExporter, ...] = ()) -> Tracing:
        """Tracing on ``provider`` (tests pass one with an in-memory exporter); never made global here."""
        from temporalio.contrib.opentelemetry import TracingInterceptor

        tracer = provider.get_tracer(DEFAULT_SERVICE_NAME)
        return cls(provider, tracer, TracingInterceptor(tracer), exporters)


def tracing_from_env(
    environ: Mapping[str, str] = os.environ, *, service_name: str = DEFAULT_SERVICE_NAME
) -> Tracing | None:
    """The tracing the OTEL variables in ``environ`` ask for, or ``None`` (off: the default).

    Raises :class:`ConfigurationError` (one line) for an exporter or protocol this service cannot use.
    """
    names = _exporter_names(environ)
    if not names:
        return None
    if "otlp" in names:
        _check_endpoints(environ)
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    exporters = tuple(_exporter(name, environ) for name in names)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing.for_provider(provider, exporters)


def _exporter_names(environ: Mapping[str, str]) -> list[str]:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    raw = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        return ["otlp"] if endpoint else []
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    for name in names:
        if name not in EXPORTERS:
            raise ConfigurationError(
                CONFIG_CODE, f"OTEL_TRACES_EXPORTER names {name!r}; this service knows otlp, console and none"
            )
    return [] if "none" in names else list(dict.fromkeys(names))


ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def _check_endpoints(environ: Mapping[str, str]) -> None:
    """Refuse an OTLP endpoint that is not an http(s) URL with a host: the exporter would only fail
    later, span batch by span batch, in a background thread nobody reads."""
    for name in ENDPOINT_VARIABLES:
        value = environ.get(name, "").strip()
        if not value:
            continue
        try:
            parts = urlsplit(value)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:  # a port that is not a number, or out of range
            valid = False
        if not valid:
            raise ConfigurationError(
                CONFIG_CODE,
                f"{name}={value[:80]!r} is not an http(s) URL with a host; set it like "
                "http://collector:4318 or unset it",
            )


def _exporter(name: str, environ: Mapping[str, str]) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = protocol or PROTOCOL
    if protocol != PROTOCOL:
        raise ConfigurationError(CONFIG_CODE, f"OTLP protocol {protocol!r} is not installed; use {PROTOCOL}")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not endpoint and environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        endpoint = environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint or None)


_process: list[Tracing | None] = []
"""This process's tracing, once :func:`process_tracing` has read the environment."""


def process_tracing(service_name: str = DEFAULT_SERVICE_NAME) -> Tracing | None:
    """This process's tracing, read from ``os.environ`` once (the first caller names the service).

    When on, its provider also becomes OpenTelemetry's global one, so that libraries' spans (the MCP
    SDK's) land in the same traces. Raises :class:`ConfigurationError` like :func:`tracing_from_env`.
    """
    if not _process:
        tracing = tracing_from_env(os.environ, service_name=service_name)
        if tracing is not None:
            from opentelemetry import trace

            trace.set_tracer_provider(tracing.provider)
        _process.append(tracing)
    return _process[0]


def client_interceptors() -> list[Interceptor]:
    """Temporal client interceptors for this process: the tracing one when tracing is on, else none."""
    tracing = process_tracing()
    return [tracing.interceptor] if tracing is not None else []


def flush_process_tracing() -> None:
    """Export what this process's tracing still holds and stop it: call it before ``os._exit``."""
    if _process and _process[0] is not None:
        _process[0].provider.shutdown()


def tracer_of(client: Client) -> Tracer | None:
    """The tracer of the ``TracingInterceptor`` that ``client`` carries (Temporal runs it in the client's
    workers too), or ``None``; it never imports the integration itself."""
    module = sys.modules.get("temporalio.contrib.opentelemetry")
    if module is None:
        return None
    for interceptor in client.config()["interceptors"]:
        if isinstance(interceptor, module.TracingInterceptor):
            return interceptor.tracer
    return None
