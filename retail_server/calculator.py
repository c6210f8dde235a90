"""τ²-bench's ``calculate`` tool, without ``eval``: arithmetic parsed and evaluated by its own rules."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from contracts.errors import CommerceErrorCode, error_from_code

_OPERATORS: dict[type[ast.operator | ast.unaryop], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def calculate(expression: str) -> str:
    """The value of an arithmetic expression (numbers, + - * /, parentheses), rounded to two decimals, as
    τ²-bench's ``calculate`` answers; anything else is refused, never evaluated."""
    if len(expression) > 500 or not all(char in "0123456789+-*/(). " for char in expression):
        raise error_from_code(
            CommerceErrorCode.INVALID_ARGUMENT, "The expression may hold only numbers, + - * / and parentheses."
        )

    def value(node: ast.expr) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "The expression is not arithmetic.")

    try:
        return str(round(value(ast.parse(expression, mode="eval").body), 2))
    except (SyntaxError, ZeroDivisionError, OverflowError):
        raise error_from_code(CommerceErrorCode.INVALID_ARGUMENT, "The expression cannot be calculated.") from None
