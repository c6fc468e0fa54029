"""One name per concept: no class name is defined in two modules of orderlab (a reader, an import or a grep finds
the one it means), and every top-level module and package of orderlab sits in a layer of the import contract."""

from __future__ import annotations

import ast
import re
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "orderlab"


def defined_twice(root: Path) -> dict[str, list[str]]:
    """Each class name defined in more than one module under `root` (nested and local classes too), with those
    modules' paths relative to `root`."""
    found: defaultdict[str, set[str]] = defaultdict(set)
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name].add(path.relative_to(root).as_posix())
    return {name: sorted(modules) for name, modules in found.items() if len(modules) > 1}


def test_no_class_name_is_defined_in_two_modules():
    assert defined_twice(PACKAGE) == {}, "one name per concept: rename one of each so that it says what it holds"


def test_a_class_name_defined_in_two_modules_is_found(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("class Result:\n    pass\n\n\nclass Alone:\n    pass\n")
    (tmp_path / "sub" / "b.py").write_text("def f():\n    class Result:\n        pass\n")
    assert defined_twice(tmp_path) == {"Result": ["a.py", "sub/b.py"]}


def test_every_top_level_module_is_in_the_layers_contract():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract["layers"] for contract in contracts if contract["type"] == "layers")
    named = {name.strip().removeprefix("orderlab.") for layer in layers for name in re.split(r"[|:]", layer)}
    top = {path.stem for path in PACKAGE.glob("*.py") if path.name != "__init__.py"}
    top |= {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert top - named == set(), "add it to [tool.importlinter]'s layers"
