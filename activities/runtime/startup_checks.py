"""What a worker checks before it polls: that cases can run on this namespace, reach commerce and
verify their credentials.

A worker that starts without them does not fail loudly: without the case search attributes every
workflow task fails and cases hang (only the worker log says why); with a commerce token the server
refuses, every order read looks like "no such order" to the model; without a readable public key
set every case fails at its first activity. So ``worker.py`` runs these checks
first and refuses to start with one line saying what is wrong and what to do.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from datetime import timedelta
from urllib.parse import urlsplit

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError

from activities.runtime.codes import StartupErrorCode
from contracts.directory import ISSUER_KID, Directory
from contracts.errors import ConfigurationError
from contracts.search_attributes import ALL_KEYS, cli_type
from keystore import DIRECTORY_ENV, load_directory
from keystore.outside_issuer import OutsideIssuer

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
            StartupErrorCode.SEARCH_ATTRIBUTE_TYPE,
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
        StartupErrorCode.SEARCH_ATTRIBUTES_MISSING,
        f"namespace {namespace!r} lacks the case search attributes {', '.join(names)} and this worker "
        f"cannot add them ({reason}); an operator runs: {commands}",
    )


LEDGER_MARK = " ledger="


def worker_identity(ledger_id: str | None) -> str:
    """The Temporal worker identity: the SDK's default (pid@host) plus the commerce ledger it pays on."""
    return f"{os.getpid()}@{socket.gethostname()}{LEDGER_MARK}{ledger_id}"


def refuse_another_ledger(live_pollers: Iterable[str], task_queue: str, ledger_id: str | None) -> None:
    """Refuse to join a task queue whose live workers (``live_pollers``, their identities, as
    :func:`case_client.live_poller_identities` lists them) pay on another commerce ledger.

    Workers of one task queue share their cases: a case quoted by one and settled by another must
    meet the same ledger (a proposal quoted elsewhere is refused at settlement, ledger_mismatch), and
    two ledgers would let one order be paid once on each.
    """
    ledgers = {identity.split(LEDGER_MARK, 1)[1] for identity in live_pollers if LEDGER_MARK in identity}
    others = sorted(ledgers - {str(ledger_id)})
    if others:
        raise ConfigurationError(
            StartupErrorCode.ANOTHER_LEDGER,
            f"workers on task queue {task_queue!r} pay on commerce ledger {', '.join(others)}, this one on "
            f"{ledger_id}: point every worker of a task queue at one commerce database (COMMERCE_DATABASE_URL "
            "or COMMERCE_MCP_URL)",
        )


def check_directory(location: str, *, from_env: bool) -> Directory:
    """The support directory at ``location`` (a file path or an https URL), read once before polling.

    Refused with one line naming the setting (``SUPPORT_DIRECTORY`` when ``from_env``, else the state
    dir's file) and the fix: a plain http URL (anyone on the way could swap the keys and reviewers that
    decide who may approve a refund; the directory is only read from a file or over https), a document
    that is missing, unreachable or invalid (its first problem named, a private key among them), and one
    that lists no issuer key while no outside issuer is configured.
    """
    named = f"{DIRECTORY_ENV}={location}" if from_env else f"the state dir's directory {location}"
    if urlsplit(location).scheme.lower() == "http":
        where = "a loopback address" if _is_loopback(location) else "another host"
        raise ConfigurationError(
            StartupErrorCode.DIRECTORY_INSECURE,
            f"{named} is plain http to {where}; the directory is read from a file or over https only: "
            "serve it over https or give a file path",
        )
    try:
        directory = load_directory(location)
    except ConfigurationError as error:
        fix = _DIRECTORY_FIXES.get(error.code, "")
        message = error.message.removeprefix(f"The directory at {location} ").rstrip(".")
        raise ConfigurationError(error.code, f"{named}: {message}{fix}") from None
    if directory.key(ISSUER_KID) is None and OutsideIssuer.from_environment() is None:
        raise ConfigurationError(
            StartupErrorCode.DIRECTORY_WITHOUT_ISSUER,
            f"{named} lists no issuer key and no outside issuer is set (SUPPORT_APPLICANT_JWKS_URL), so no "
            "applicant token could verify; run `starter.py init` or publish the issuer's key",
        )
    return directory


_DIRECTORY_FIXES = {
    "directory_unreadable": "; check that the file or URL is there and reachable from this worker",
    "directory_invalid": "; fix the document (`starter.py directory show` reads it the same way)",
}


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
