"""What a worker checks before it polls: that cases can run on this namespace and reach commerce.

A worker that starts without them does not fail loudly: without the case search attributes every
workflow task fails and cases hang (only the worker log says why); with a commerce token the server
refuses, every order read looks like "no such order" to the model. So ``worker.py`` runs these checks
first and refuses to start with one line saying what is wrong and what to do.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError

from contracts.errors import ConfigurationError
from contracts.search_attributes import ALL_KEYS, cli_type

RPC_TIMEOUT = timedelta(seconds=10)


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register the case search attributes the namespace lacks; return the names added.

    Raises :class:`ConfigurationError` when one exists with another type, or when they are missing and
    this worker may not add them (Temporal Cloud, or no operator permission): the message gives the
    command an operator runs instead.
    """
    namespace = client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace), timeout=RPC_TIMEOUT
        )
    except RPCError as error:
        raise _cannot_register(namespace, [key.name for key in ALL_KEYS], error.message) from None
    existing = {**listed.system_attributes, **listed.custom_attributes}
    wrong = [
        f"{key.name} is {IndexedValueType.Name(existing[key.name])}"
        for key in ALL_KEYS
        if key.name in existing and existing[key.name] != int(key.indexed_value_type)
    ]
    if wrong:
        raise ConfigurationError(
            "search_attribute_type",
            f"namespace {namespace!r} has case search attributes of the wrong type ({'; '.join(wrong)}); "
            f"they must be {_wanted()}",
        )
    missing = [key for key in ALL_KEYS if key.name not in existing]
    if not missing:
        return []
    request = AddSearchAttributesRequest(
        namespace=namespace,
        search_attributes={key.name: IndexedValueType.ValueType(int(key.indexed_value_type)) for key in missing},
    )
    try:
        await client.operator_service.add_search_attributes(request, timeout=RPC_TIMEOUT)
    except RPCError as error:
        raise _cannot_register(namespace, [key.name for key in missing], error.message) from None
    return [key.name for key in missing]


def _wanted() -> str:
    return ", ".join(f"{key.name}={cli_type(key)}" for key in ALL_KEYS)


def _cannot_register(namespace: str, names: list[str], reason: str) -> ConfigurationError:
    commands = " && ".join(
        f"temporal operator search-attribute create --namespace {namespace} --name {key.name} --type {cli_type(key)}"
        for key in ALL_KEYS
        if key.name in names
    )
    return ConfigurationError(
        "search_attributes_missing",
        f"namespace {namespace!r} lacks the case search attributes {', '.join(names)} and this worker "
        f"cannot add them ({reason}); an operator runs: {commands}",
    )
