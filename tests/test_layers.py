"""The package's layers: every import inside ``disan`` points to a lower floor or stays in its subpackage.

Floors, lowest first (a subpackage may use the floors below it, never its neighbours or those above):

    1  disan.data
    2  disan.nn
    3  disan.inspect (load, predict, trace, batched traces, token vectors, word senses, measures, the catalog),
       disan.store (the disk and memory caches)
    4  disan.analyses (what is computed), disan.render (what is drawn), disan.training
    5  disan.app (the Streamlit glue)
    6  disan.tools (benchmarks and commands, which may start the app)
    7  disan (the public API in __init__, viz) and disan.__main__ (the command line)

The Streamlit app (app.py and app_pages/) stands on disan.app, disan.analyses, disan.render and disan.inspect only.
Beyond the floors, the rooms keep their jobs: render never imports torch, analyses never draw (no plotly,
no Streamlit), store never stores drawings.
"""
import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "disan"
FLOORS = {"data": 1, "nn": 2, "inspect": 3, "store": 3, "analyses": 4, "render": 4, "training": 4, "app": 5,
          "tools": 6}
TOP = 7


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """Every ``disan...`` module that the file imports, at module level or inside functions."""
    found = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            found.add(target)
            # "from disan.nn import checkpoint" imports the module disan.nn.checkpoint
            found |= {f"{target}.{a.name}" for a in node.names}
    known = modules()
    return {name for name in found if name in known}


def floor(module: str) -> tuple[int, str]:
    """(floor, subpackage) of a module; the package root and __main__ are the top floor."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FLOORS:
        return FLOORS[parts[1]], parts[1]
    return TOP, ""


def test_no_import_runs_upward_or_sideways():
    problems = []
    for name, path in modules().items():
        level, sub = floor(name)
        for target in imports(path):
            t_level, t_sub = floor(target)
            inside = bool(sub) and t_sub == sub
            if not inside and level < TOP and t_level >= level:
                problems.append(f"{name} (floor {level}) imports {target} (floor {t_level})")
    assert not problems, "\n".join(problems)


def test_no_import_loops():
    graph = {name: imports(path) - {name} for name, path in modules().items()}
    # a package's __init__ is imported with any of its modules; leave those edges out of the loop search
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    state: dict[str, int] = {}
    loops = []

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                loops.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not loops, "\n".join(loops)


def test_the_tree_shows_the_layers():
    top_modules = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    subpackages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert len(top_modules) <= 6, top_modules
    assert sorted(FLOORS) == subpackages  # every subpackage has a floor, and every floor a folder


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_every_subpackage_says_its_floor(name):
    # the docstring is where a reader learns the layers; it must not drift from FLOORS
    summary = importlib.import_module(f"disan.{name}").__doc__.split("\n")[0]
    assert summary.startswith(f"Floor {FLOORS[name]},"), summary


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_only_the_app_layer_imports_streamlit(name):
    for path in (PACKAGE / name).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        uses = any(isinstance(n, (ast.Import, ast.ImportFrom)) and "streamlit" in ast.dump(n) for n in ast.walk(tree))
        assert name == "app" or not uses, f"{path} imports streamlit"


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_imports(name):
    # an import of a module that moved or was removed fails here, not when a user runs that command
    importlib.import_module(name)


def private_uses(path: Path, root: Path = ROOT) -> list[str]:
    """Private names of this project's modules used in ``path``: ``from disan.x import _name`` (relative
    imports too), and ``module._name`` on a module imported from this project. A leading underscore says
    a name is its module's own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root)
    found, modules = [], set()
    for node in ast.walk(tree):
        ours = isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "disan")
        if ours:
            found += [f"{where}: from {node.module} import {a.name}" for a in node.names if a.name.startswith("_")]
            modules |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "disan"}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append(f"{where}: {node.value.id}.{node.attr}")
    return found


def app_sources() -> list[Path]:
    """The Streamlit app's script and its pages."""
    pages = sorted((ROOT / "app_pages").glob("*.py"))
    assert pages, "no page found in app_pages/: the scans below would check nothing"
    return [ROOT / "app.py", *pages]


def test_no_module_uses_another_modules_private_names():
    sources = [*PACKAGE.rglob("*.py"), *app_sources(),
               *(p for folder in ("scripts", "tests") for p in (ROOT / folder).glob("*.py"))]
    problems = [line for path in sources for line in private_uses(path)]
    assert not problems, "\n".join(problems)


def test_the_private_name_scan_finds_each_form(tmp_path):
    # the scan must see aliases, relative imports and attribute access, or the test above proves nothing
    (tmp_path / "m.py").write_text("from disan.nn.model import _per_block as per_block\nfrom .x import _y\n"
                                   "from disan.inspect import pipeline\nimport disan.nn.model\n"
                                   "pipeline._on_device(None, 'cpu')\ndisan._hidden\npipeline.__doc__\n")
    assert len(private_uses(tmp_path / "m.py", tmp_path)) == 4


# What app.py and the pages may import of the project: they wire widgets to the app's glue and to what
# is drawn and inspected; the rules (benchmarks, model kinds, training configs) live below, behind disan.app.
APP_READS = ("app", "analyses", "render", "inspect")


def app_imports_below(path: Path, root: Path = ROOT) -> list[str]:
    """The modules of this project that ``path`` imports outside :data:`APP_READS` (``disan`` itself
    included), at module level or inside functions."""
    where = path.relative_to(root)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "disan":  # "from disan import nn" imports disan.nn
            names = [f"disan.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "disan" and (len(parts) == 1 or parts[1] not in APP_READS):
                found.append(f"{where}: {name}")
    return found


def test_the_app_and_its_pages_import_only_the_app_analyses_render_and_inspect():
    problems = [line for path in app_sources() for line in app_imports_below(path)]
    assert not problems, "\n".join(problems)


def test_the_app_import_scan_finds_each_form(tmp_path):
    # the scan must see plain imports, from-imports of modules and of subpackages, and imports in functions
    (tmp_path / "page.py").write_text(
        "import streamlit as st\nimport disan.nn.heads\nfrom disan.data.text import MAX_TOKENS\n"
        "from disan import training, app\nfrom disan.app import links\nfrom disan.render.views import VIEWS\n"
        "import disan.inspect.senses\ndef f():\n    from disan.tools import latency\n    import disan\n")
    assert sorted(app_imports_below(tmp_path / "page.py", tmp_path)) == [
        "page.py: disan", "page.py: disan.data.text", "page.py: disan.nn.heads", "page.py: disan.tools",
        "page.py: disan.training"]


def third_party(path: Path) -> set[str]:
    """The top-level names of every package outside this project that ``path`` imports, at module level or
    inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found - {"disan"}


# The rooms of floors 3 and 4, by what they must never import: a drawing needs no torch, a computation no
# figure, a cache no drawing.
ROOM_RULES = {
    "render": {"torch"},
    "analyses": {"plotly", "streamlit"},
    "store": {"plotly", "streamlit", "torch"},
}


@pytest.mark.parametrize("room", sorted(ROOM_RULES))
def test_each_room_keeps_to_its_job(room):
    problems = [f"{path.relative_to(ROOT)} imports {name}" for path in sorted((PACKAGE / room).rglob("*.py"))
                for name in sorted(third_party(path) & ROOM_RULES[room])]
    assert not problems, "\n".join(problems)


def test_the_room_scan_finds_each_form(tmp_path):
    (tmp_path / "m.py").write_text("import torch.nn as nn\nfrom plotly import graph_objects\n"
                                   "def f():\n    import streamlit as st\nfrom . import x\nimport disan.nn\n")
    assert third_party(tmp_path / "m.py") == {"torch", "plotly", "streamlit"}


def test_render_draws_without_loading_torch():
    # a restarted server draws a kept result before torch has loaded only if rendering never pulls it in,
    # not even through the floors below (the kinds registry and the measures import torch where they compute)
    names = sorted(name for name in modules() if name.startswith("disan.render"))
    code = f"import sys\nfor name in {names!r}:\n    __import__(name)\nprint('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", names
