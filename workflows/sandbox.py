"""How the workflow sandbox is configured, for every worker and every replayer.

The approval gate verifies Ed25519 signatures inside the workflow. cryptography's Rust layer imports
``cryptography.exceptions`` the first time a signature fails to verify; a re-import inside the
sandbox fails and aborts the whole process, so one forged approval would kill every worker that
runs or replays the case. cryptography and PyJWT are deterministic libraries with no I/O in the paths
the gate uses, so they are passed through: the sandbox uses the real modules.

Passkey approvals (:mod:`contracts.passkey`) are verified in the workflow too, by py_webauthn
(``webauthn``), which decodes COSE keys and authenticator data with ``cbor2`` (a C extension) and
verifies with cryptography; its attestation formats import pyOpenSSL (``OpenSSL``) and
``pyasn1``/``pyasn1_modules`` (registration only, never called in a workflow). None of them keeps
state, reads a clock or does I/O on the verification path. The workflow reaches them through
``contracts``, which it imports passed through, so today the sandbox already gets the host's modules
(measured: tests/e2e/test_passkey_approval.py passes without these entries, replay stress included);
they are named so that every other form of import gets the host's modules too, and no C extension is
ever loaded a second time inside the sandbox.

The workflow's own helper modules (``workflows.*`` but the workflow module) are deterministic and
keep no state between runs (constants, pure functions), and the workflow imports them inside
``imports_passed_through()``. An import of the form ``from workflows import requests`` escapes that
block, though: the sandbox loads the ``workflows`` package afresh for the workflow module and Python
imports the named submodule into it, so every run and every replay re-read, re-compiled and
re-executed those modules (measured: about a tenth of a refund case's worker CPU). They are named
here, so that every form of import gets the host's module, as intended.
"""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

PASSTHROUGH_MODULES = ("cryptography", "jwt", "webauthn", "cbor2", "OpenSSL", "pyasn1", "pyasn1_modules")
WORKFLOW_HELPER_MODULES = (
    "workflows.activity_options",
    "workflows.case_details",
    "workflows.case_logs",
    "workflows.case_metrics",
    "workflows.requests",
)
"""The helpers the workflow modules import as ``from workflows import ...`` (see above)."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandboxed runner with the modules above passed through."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(
            *PASSTHROUGH_MODULES, *WORKFLOW_HELPER_MODULES
        )
    )
