"""Upgrade safety: a changed workflow deployed while a case waits for its reviewer (docs/upgrades.md)."""
