"""A retail write's arguments as τ²-bench's tools take them, read by name and type."""

from __future__ import annotations

from contracts.errors import CommerceErrorCode, error_from_code
from contracts.retail import RetailAddress


class WriteArguments:
    """A write's arguments, read by name and type; a missing or mistyped one is ``invalid_argument``."""

    def __init__(self, arguments: dict[str, object]) -> None:
        self._arguments = arguments

    def text(self, name: str) -> str:
        value = self._arguments.get(name)
        if not isinstance(value, str) or not value or len(value) > 200:
            raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, f"{name} must be a non-empty string.")
        return value

    def ids(self, name: str) -> list[str]:
        value = self._arguments.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > 50:
            raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, f"{name} must be a list of item ids.")
        return list(value)

    def address(self) -> RetailAddress:
        fields = {name: self._arguments.get(name) for name in RetailAddress.model_fields}
        if not all(isinstance(value, str) for value in fields.values()):
            raise error_from_code(
                CommerceErrorCode.INVALID_ARGUMENT,
                "An address names address1, address2, city, state, country and zip, each a string.",
            )
        return RetailAddress.model_validate(fields)
