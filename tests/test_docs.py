"""The documentation site: `mkdocs build --strict` passes (a broken link, a missing anchor or a docstring's
cross-reference that names nothing fails it), the command-line page is written from the parsers the commands
run with, the docstrings' Sphinx roles become checked cross-references, and the site fetches nothing from
outside (no web fonts)."""
import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import docs_hooks  # noqa: E402


@pytest.fixture(scope="module")
def package():
    """The package as griffe reads it (statically, nothing imported), roles untouched."""
    return griffe.load("disan", search_paths=[str(ROOT)], resolve_aliases=False)


@pytest.mark.quick
def test_a_role_becomes_a_cross_reference_to_what_it_names_in_its_scope(package, caplog):
    figures = package["render.figures"]  # it imports lift's module: a name resolved as Python would
    assert docs_hooks.cross_references(package["inspect.measures"], "see :func:`lift`.") == (
        "see [`lift`][disan.inspect.measures.lift].")
    assert docs_hooks.cross_references(figures, ":func:`~disan.inspect.measures.token_importance`") == (
        "[`token_importance`][disan.inspect.measures.token_importance]")
    assert docs_hooks.cross_references(figures, ":attr:`the lift <disan.inspect.measures.lift>`") == (
        "[`the lift`][disan.inspect.measures.lift]")
    assert docs_hooks.cross_references(figures, ":class:`np.ndarray`") == "`np.ndarray`"  # numpy: code
    assert not caplog.records


@pytest.mark.quick
@pytest.mark.parametrize("role, why", [(":func:`no_such_function`", "names nothing"),
                                       (":mod:`disan.no_such_module`", "names nothing"),
                                       (":func:`_figure`", "private")])
def test_a_role_that_names_nothing_the_reference_shows_is_a_warning(package, caplog, role, why):
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.disan"):
        shown = docs_hooks.cross_references(package["render.figures"], role)
    assert "[" not in shown and shown.startswith("`")
    assert len(caplog.records) == 1 and why in caplog.records[0].getMessage()
    assert caplog.records[0].name.startswith("mkdocs.")  # mkdocs --strict counts its loggers' warnings


@pytest.mark.quick
def test_the_command_line_page_has_every_command_and_every_training_flag():
    from disan.__main__ import FORWARDED
    from disan.training.config import TrainConfig
    page = docs_hooks.commands_markdown()
    for name in ("train", "evaluate", *FORWARDED):
        assert f"\n## {name}\n" in page
    for field in dataclasses.fields(TrainConfig):
        if "help" in field.metadata:  # the fields the train command takes as flags
            assert f"--{field.name.replace('_', '-')}" in page, field.name
    assert "--recipe {ours,authors}" in page
    assert "usage: python -m disan predict" in page and "--text-column" in page


@pytest.mark.quick
def test_a_command_without_a_parser_is_named(monkeypatch):
    from disan.__main__ import FORWARDED, Command, command_parser
    monkeypatch.setitem(FORWARDED, "nothing", Command("json", "a module with no parser()"))
    with pytest.raises(TypeError, match="json has no parser"):
        command_parser("nothing")


@pytest.mark.quick
def test_findings_recomputes_the_figures_of_every_analysis_page_that_quotes_some():
    import findings
    quoting = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")
               if any(line.startswith("What it showed") for line in p.read_text(encoding="utf-8").splitlines())}
    assert quoting and set(findings.PAGES.values()) == quoting


@pytest.mark.quick
def test_the_readme_links_only_to_files_that_are_there():
    import re
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme) + re.findall(r'(?:href|src)="([^"]+)"', readme)
    local = [t.split("#")[0] for t in targets if "://" not in t]
    assert len(local) > 20  # the screenshots and the links into docs/
    assert [t for t in local if not (ROOT / t).is_file()] == []


def test_the_site_builds_strictly_and_fetches_no_fonts(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-5000:]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: python -m disan analysis-bench" in cli and "--resamples" in cli  # written at build time
    reference = (site / "reference" / "inspect" / "index.html").read_text(encoding="utf-8")
    assert 'href="#disan.inspect.measures.lift"' in reference  # a role made a link
    pages = [p.read_text(encoding="utf-8") for p in site.rglob("*.html")]
    assert not any("fonts.googleapis" in page or "fonts.gstatic" in page for page in pages)
