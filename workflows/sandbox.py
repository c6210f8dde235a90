"""How the workflow sandbox is configured, for every worker and every replayer.

The approval gate verifies Ed25519 signatures inside the workflow. cryptography's Rust layer imports
``cryptography.exceptions`` the first time a signature fails to verify; a re-import inside the
sandbox fails and aborts the whole process, so one forged approval would kill every worker that
runs or replays the case. cryptography and PyJWT are deterministic libraries with no I/O in the paths
the gate uses, so they are passed through: the sandbox uses the real modules.
"""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

PASSTHROUGH_MODULES = ("cryptography", "jwt")


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandboxed runner with the modules above passed through."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    )
