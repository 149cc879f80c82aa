"""Every public function, class and method of iosim has a docstring (issue 9: what it takes and
returns, with units). Read from the source with ast: nothing is imported, so the calibration
modules (torch, triton) are checked too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "iosim"


def _public(nodes: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [n for n in nodes if isinstance(n, kinds) and not n.name.startswith("_")]


def test_every_public_definition_has_a_docstring() -> None:
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _public(tree.body):
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
            if ast.get_docstring(node) is None:
                missing.append(where)
            if isinstance(node, ast.ClassDef):
                missing += [f"{where}.{m.name}" for m in _public(node.body)
                            if not isinstance(m, ast.ClassDef) and ast.get_docstring(m) is None]
    assert missing == [], "public definitions without a docstring:\n" + "\n".join(missing)
