"""Workflows decide: the deterministic support-case lifecycle lives here and performs no I/O."""
