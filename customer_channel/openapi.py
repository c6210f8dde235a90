"""The OpenAPI 3.1 description of the channel, generated from its route table (:class:`Endpoint`, the
same list :func:`customer_channel.app.build_app` serves) and the pydantic models' JSON schemas: what a
route takes and answers is written once, in code, and the description follows it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import Response

from customer_channel.bodies import CASE_ID_PATTERN

OPENAPI_VERSION = "3.1.0"
TITLE = "Qinghe customer channel (fictional)"
VERSION = "1"
BEARER_SCHEME = "bearer"
PATH_PARAMETER = re.compile(r"\{(\w+)\}")
PATH_PATTERNS = {"case_id": CASE_ID_PATTERN}

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Answer:
    """One response of a route: its description, and its JSON body's model (None: not JSON, or none)."""

    description: str
    model: type[BaseModel] | None = None
    media_type: str = "application/json"


@dataclass(frozen=True)
class Endpoint:
    """One route of the channel, as it is served and as the description states it."""

    method: Literal["GET", "POST"]
    path: str
    handler: Handler
    summary: str
    responses: Mapping[int, Answer]
    body: type[BaseModel] | None = None
    bearer: bool = False
    headers: Sequence[tuple[str, str]] = field(default_factory=tuple)
    """Request headers it reads besides the credential: (name, description)."""
    tag: str = "conversations"


def _models(endpoints: Sequence[Endpoint]) -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    wanted: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {}
    for endpoint in endpoints:
        if endpoint.body is not None:
            wanted[(endpoint.body, "validation")] = None
        for answer in endpoint.responses.values():
            if answer.model is not None:
                wanted[(answer.model, "serialization")] = None
    return list(wanted)


def openapi_document(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document for ``endpoints``."""
    refs, definitions = models_json_schema(_models(endpoints), ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        operation: dict[str, Any] = {
            "summary": endpoint.summary,
            "operationId": endpoint.handler.__name__,
            "tags": [endpoint.tag],
            "responses": {
                str(status): _response(answer, refs) for status, answer in sorted(endpoint.responses.items())
            },
        }
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string", "pattern": PATH_PATTERNS[name]}}
            for name in PATH_PARAMETER.findall(endpoint.path)
        ]
        parameters += [
            {"name": name, "in": "header", "required": False, "description": text, "schema": {"type": "string"}}
            for name, text in endpoint.headers
        ]
        if parameters:
            operation["parameters"] = parameters
        if endpoint.body is not None:
            schema = refs[(endpoint.body, "validation")]
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        if endpoint.bearer:
            operation["security"] = [{BEARER_SCHEME: []}]
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": TITLE,
            "version": VERSION,
            "description": "A customer's conversation with the support service: start it, write to it, read "
            "its transcript and follow its progress (Server-Sent Events). All data is fictional.",
        },
        "paths": paths,
        "components": {
            "schemas": definitions.get("$defs", {}),
            "securitySchemes": {
                BEARER_SCHEME: {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "The built-in issuer's applicant token for the case, or the outside "
                    "issuer's ID token where one is configured (SUPPORT_APPLICANT_JWKS_URL).",
                }
            },
        },
    }


def _response(answer: Answer, refs: Mapping[Any, dict[str, Any]]) -> dict[str, Any]:
    shown: dict[str, Any] = {"description": answer.description}
    if answer.model is not None:
        shown["content"] = {answer.media_type: {"schema": refs[(answer.model, "serialization")]}}
    elif answer.media_type != "application/json":
        shown["content"] = {answer.media_type: {"schema": {"type": "string"}}}
    return shown
