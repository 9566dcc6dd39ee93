"""The documentation site's build steps (mkdocs.yml names this file twice).

As an MkDocs hook: the command-line page (docs/cli.md) gets every command's ``--help``, written at build
time from the argparse parsers the commands run with (``disan.__main__.command_parser``), so the page
cannot drift from the code.

As a griffe extension (mkdocstrings' ``extensions``): the docstrings' Sphinx roles (:func:`x`,
:class:`~a.b.C`, ...) become mkdocstrings cross-references to the full path of what they name, resolved
in the docstring's own scope as Python would (its module's definitions and imports, its class). A name
that resolves nowhere, or to a private object the reference leaves out, is a warning, which
``mkdocs build --strict`` makes an error; autorefs then checks that every target is on a page. Names
outside the package (torch, numpy) stay code, unlinked: there is no inventory of theirs to check them
against offline.
"""
from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.plugins.disan")  # under "mkdocs": a warning fails a strict build
PACKAGE = "disan"
ROLE = re.compile(r":(?:func|class|meth|data|attr|mod|obj|exc|const):`(~?)([^`]+)`")
CLI_MARKER = "<!-- commands -->"
HELP_COLUMNS = "80"  # argparse wraps --help to $COLUMNS: a width that fits the page, whatever terminal builds the site


def is_private(path: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in path.split("."))


def target_of(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as written in ``obj``'s docstring; raises ``griffe.NameResolutionError``."""
    first, _, rest = name.partition(".")
    if first == PACKAGE:
        path = name
    else:
        scope = obj if obj.is_class or obj.is_module else obj.parent
        path = scope.resolve(first) + (f".{rest}" if rest else "")
    if path.startswith(PACKAGE + ".") or path == PACKAGE:
        obj.modules_collection.get_member(path)  # KeyError: no such object
    return path


def cross_references(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role made ``[shown][full.path]`` (code, unlinked, outside the package)."""
    def replace(match: re.Match) -> str:
        short, written = match.group(1), match.group(2)
        label, _, explicit = written.partition(" <")  # :attr:`shown text <target>`
        name = (explicit.removesuffix(">") if explicit else written).removesuffix("()")
        shown = f"`{label if explicit else name.rsplit('.', 1)[-1] if short else name}`"
        try:
            path = target_of(obj, name)
        except (griffe.NameResolutionError, KeyError, ValueError):
            log.warning("%s: %s names nothing in its scope", obj.path, match.group(0))
            return shown
        if not (path == PACKAGE or path.startswith(PACKAGE + ".")):
            return shown
        if is_private(path):
            log.warning("%s: %s names a private object, which the reference leaves out", obj.path, match.group(0))
            return shown
        return f"[{shown}][{path}]"
    return ROLE.sub(replace, text)


def documented(obj: griffe.Object):
    """``obj`` and every object defined under it (imported names are their own module's)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from documented(member)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in documented(pkg):
            if obj.docstring is not None:
                obj.docstring.value = cross_references(obj, obj.docstring.value)


def commands_markdown() -> str:
    """A section per command: its one-line help and its whole ``--help``, from the parser it runs with."""
    if str(ROOT) not in sys.path:  # mkdocs runs from the repository's root, which a hook's imports do not see
        sys.path.insert(0, str(ROOT))
    from disan.__main__ import FORWARDED, command_parser, parser
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        sections = [f"```text\n{parser().format_help()}```"]
        for name in ("train", "evaluate", *FORWARDED):
            sections.append(f"## {name}\n\n```text\n{command_parser(name).format_help()}```")
    finally:
        if columns is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = columns
    return "\n\n".join(sections)


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    if CLI_MARKER in markdown:
        return markdown.replace(CLI_MARKER, commands_markdown())
    return markdown
