"""Every ```python block of the README runs as it is, from the repository root, on the shipped checkpoints:
an example a reader copies can never crash. Where a line's comment is a Python literal
(``r.sentence.tokens  # ['The', 'glass', ...]``), the line's value must equal it."""
import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)


def promised(line: str):
    """The literal a line's comment promises, or None when the comment is prose."""
    _, hash_, comment = line.partition("#")
    if not hash_:
        return None
    try:
        return (ast.literal_eval(comment.strip()),)
    except (ValueError, SyntaxError):
        return None


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 3  # the notebook API, the library and the encoder alone
    assert any(promised(line) for block in BLOCKS for line in block.splitlines())  # some lines say their value


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block-{k + 1}" for k in range(len(BLOCKS))])
def test_a_readme_example_runs_and_shows_what_it_says(block, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name checkpoints/... relative to the repository root
    namespace = {"__name__": "__readme__"}
    lines = block.splitlines()
    for statement in ast.parse(block).body:
        code = ast.get_source_segment(block, statement)
        if isinstance(statement, ast.Expr):
            value = eval(compile(ast.Expression(statement.value), "README.md", "eval"), namespace)  # noqa: S307
            expected = promised(lines[statement.end_lineno - 1])
            if expected is not None:
                assert value == expected[0], code
        else:
            exec(compile(ast.Module([statement], []), "README.md", "exec"), namespace)  # noqa: S102
