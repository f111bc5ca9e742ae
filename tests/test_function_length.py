"""No function in the package over 80 lines (docstring included): long ones get split."""

from __future__ import annotations

import ast
from pathlib import Path

import scconsensus

MAX_LINES = 80


def function_lengths() -> dict[str, int]:
    root = Path(scconsensus.__file__).parent
    lengths = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{path.relative_to(root).as_posix()}::{node.name}:{node.lineno}"
                lengths[name] = node.end_lineno - node.lineno + 1
    return lengths


def test_no_function_over_80_lines():
    lengths = function_lengths()
    assert len(lengths) > 500  # the scan sees the whole package
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not long, f"functions over {MAX_LINES} lines: {long}"
