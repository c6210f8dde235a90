"""The local development stack: what `make dev-server`, `make demo`, the tests, the benchmarks and
the scripts start on this machine, and nothing the service itself needs.

:mod:`devstack.temporal_cli` finds the Temporal CLI; :mod:`devstack.servers` starts and stops a
Temporal dev server and the codec server as child processes; :mod:`devstack.ports` says who holds a
port that is taken; :mod:`devstack.rehearsal_stack` runs a whole throwaway stack with the rehearsal
model; :mod:`devstack.dev_server` is ``make dev-server`` (``python -m devstack``). It imports the
shared contracts, the case client and, for the rehearsal stack, the worker; nothing but the command
line, the tests, the benchmarks and the scripts imports it.
"""
