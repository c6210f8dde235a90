"""The base of the case contracts' value models: frozen (a value, never changed in place) and strict
(a key the model does not have is refused, not dropped)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
