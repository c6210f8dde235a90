"""Tests of the reviewer console (store, sessions, CSRF, enrollment tokens, ceremonies)."""
