"""The readers of a case's workflow history: pure, with no server, worker, database, keys or clock.

:mod:`case_history.trail` decodes the runs of one case from a fetched or exported history;
:mod:`case_history.verify` checks its chain of proof (applicant token, proposal digest, approval,
receipt) against public keys from outside the history; :mod:`case_history.audit` (with
:mod:`case_history.audit_reviews`) reads the whole case as an auditor sees it. How any of it is
printed belongs to the command line (:mod:`cli`).
"""
