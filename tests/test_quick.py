"""The quick tier, ``pytest -m quick``: the edit-test cycle's few minutes, in which every module of ``disan``
that defines a function or a class is exercised by at least one quick test that calls into it (importing it
is not enough). The full suite stays the CI's and the README's test command.

A test is quick when it is marked ``quick`` itself or its file sets ``pytestmark`` to include the mark. What a
quick test reaches is what its body, the helpers and fixtures of its file (and conftest.py's) that it calls,
name of the project's modules: ``from disan.nn import checkpoint`` then ``checkpoint.load(...)`` reaches
``disan.nn.checkpoint``; ``from disan.nn.model import DiSA`` then ``DiSA(...)`` reaches ``disan.nn.model``.
"""
import ast
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def project_modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((ROOT / "disan").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def defines_code(path: Path) -> bool:
    """Whether a module defines a function or a class (a module of constants or re-exports has no behaviour
    of its own to test)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def is_quick(decorators: list[ast.expr]) -> bool:
    return any("quick" in ast.unparse(d) for d in decorators)


def file_is_quick(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
               and "quick" in ast.unparse(n.value) for n in tree.body)


def bindings(tree: ast.Module, modules: dict[str, Path]) -> dict[str, str]:
    """The names a file binds by importing the project's modules: name -> the module it stands for or
    comes from."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "disan":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = full if full in modules else node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "disan":
                    # "import disan.data.text" binds only the name disan: what it reaches is read from the
                    # attribute chains (disan.data.text.tokenize), not from the name alone
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound.setdefault("disan", "")
    return bound


def dotted(node: ast.Attribute) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, None for anything else (a call's result, a subscript)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def reached(node: ast.AST, bound: dict[str, str], modules: dict[str, Path]) -> set[str]:
    """The project's modules that the code of ``node`` names through the file's imports."""
    found = set()
    inner = {id(sub.value) for sub in ast.walk(node) if isinstance(sub, ast.Attribute)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and id(sub) not in inner and (chain := dotted(sub)):
            # checkpoint.load, disan.nn.model.DiSA: the whole chain's longest module prefix
            while "." in chain and chain not in modules:
                chain = chain.rpartition(".")[0]
            head = chain.split(".")[0]
            if chain in modules and head in bound:
                found.add(chain)
        if isinstance(sub, ast.Name) and bound.get(sub.id):
            found.add(bound[sub.id])
    return found & set(modules)


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def quick_reach(path: Path, modules: dict[str, Path], shared: dict[str, ast.FunctionDef],
                shared_bound: dict[str, str]) -> set[str]:
    """The modules that the quick tests of one test file reach, through its helpers and fixtures and
    conftest.py's fixtures too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = bindings(tree, modules)
    local = functions(tree)
    whole = file_is_quick(tree)
    tests = [f for name, f in local.items() if name.startswith("test") and (whole or is_quick(f.decorator_list))]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
        tests += [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")
                  and (whole or is_quick(cls.decorator_list) or is_quick(f.decorator_list))]
    found, seen, todo = set(), set(), list(tests)
    shared_ids = {id(f) for f in shared.values()}
    while todo:
        func = todo.pop()
        if id(func) in seen:
            continue
        seen.add(id(func))
        own = id(func) in shared_ids
        found |= reached(func, shared_bound if own else bound, modules)
        # the helpers it calls and the fixtures it asks for, by name
        names = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)} | {a.arg for a in func.args.args}
        todo += [f for f in ((shared if own else local).get(n) or shared.get(n) for n in names) if f is not None]
    return found


def quick_coverage() -> set[str]:
    modules = project_modules()
    conftest = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    shared, shared_bound = functions(conftest), bindings(conftest, modules)
    found = set()
    for path in sorted(TESTS.glob("test_*.py")):
        found |= quick_reach(path, modules, shared, shared_bound)
    return found


def test_every_module_has_a_quick_test_that_calls_into_it():
    covered = quick_coverage()
    missing = sorted(name for name, path in project_modules().items() if defines_code(path) and name not in covered)
    assert not missing, "no quick test calls into: " + ", ".join(missing)


def test_the_scan_tells_a_call_from_an_import(tmp_path, monkeypatch):
    # the check above proves nothing unless an import alone, or a call from a slow test, is not counted
    (tmp_path / "conftest.py").write_text("from disan.nn import masks\n\ndef mask_fixture():\n"
                                          "    return masks.direction_mask(3, 'fw')\n")
    (tmp_path / "test_a.py").write_text(
        "import pytest\nfrom disan.nn import checkpoint\nfrom disan.nn.model import DiSA\nimport disan.data.text\n"
        "from disan.training import metrics\n\n"
        "def helper():\n    return disan.data.text.tokenize('a b')\n\n"
        "@pytest.mark.quick\ndef test_one(mask_fixture):\n    helper()\n    return DiSA\n\n"
        "def test_slow():\n    checkpoint.load('x')\n")
    monkeypatch.setattr(sys.modules[__name__], "TESTS", tmp_path)
    assert quick_coverage() == {"disan.nn.model", "disan.data.text", "disan.nn.masks"}
