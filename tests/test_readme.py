"""Every ```python block of the README and of the documentation's pages (docs/**/*.md) runs as it is, from the
repository root, on the shipped checkpoints: an example a reader copies can never crash. Where a line's comment
is a Python literal (``r.sentence.tokens  # ['The', 'glass', ...]``), the line's value must equal it."""
import ast
import importlib.util
import linecache
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [(page.relative_to(ROOT).as_posix(), block) for page in PAGES
            for block in re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)]
BLOCKS = [block for page, block in EXAMPLES if page == "README.md"]
# Extras without a wheel on every platform (pyproject.toml): an example that imports one runs where it is installed.
OPTIONAL = ("nnsight",)


def promised(line: str):
    """The literal a line's comment promises, or None when the comment is prose."""
    _, hash_, comment = line.partition("#")
    if not hash_:
        return None
    try:
        return (ast.literal_eval(comment.strip()),)
    except (ValueError, SyntaxError):
        return None


def test_the_readme_and_the_notebook_page_have_python_examples():
    assert BLOCKS  # the notebook API in brief
    notebook = [block for page, block in EXAMPLES if page == "docs/notebook.md"]
    assert len(notebook) >= 3  # the notebook API, the library and the encoder alone
    assert any(promised(line) for block in BLOCKS for line in block.splitlines())  # some lines say their value
    assert any(promised(line) for block in notebook for line in block.splitlines())


def example_ids() -> list[str]:
    """``README.md-1``, ``docs/notebook.md-2``: each page's blocks numbered from 1."""
    seen: dict[str, int] = {}
    ids = []
    for page, _ in EXAMPLES:
        seen[page] = seen.get(page, 0) + 1
        ids.append(f"{page}-{seen[page]}")
    return ids


@pytest.mark.parametrize("page, block", EXAMPLES, ids=example_ids())
def test_an_example_runs_and_shows_what_it_says(page, block, monkeypatch):
    missing = [name for name in OPTIONAL if re.search(rf"^\s*(from|import) {name}\b", block, re.M)
               and importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"needs {missing[0]}, an optional extra not installed here")
    monkeypatch.chdir(ROOT)  # the examples name checkpoints/... relative to the repository root
    namespace = {"__name__": "__readme__"}
    lines = block.splitlines()
    # the block's source under its own name, as Jupyter keeps a cell's: tools that read the code they run
    # (nnsight's traces) find it there
    source = f"<{page} block>"
    monkeypatch.setitem(linecache.cache, source, (len(block), None, block.splitlines(keepends=True), source))
    for statement in ast.parse(block).body:
        code = ast.get_source_segment(block, statement)
        if isinstance(statement, ast.Expr):
            value = eval(compile(ast.Expression(statement.value), source, "eval"), namespace)  # noqa: S307
            expected = promised(lines[statement.end_lineno - 1])
            if expected is not None:
                assert value == expected[0], code
        else:
            exec(compile(ast.Module([statement], []), source, "exec"), namespace)  # noqa: S102
