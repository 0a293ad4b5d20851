"""MkDocs hook: the table of ``GCAConfig``'s fields on the configuration reference page (docs/reference/config.md).

A page holding the marker ``<!-- gca-config-fields -->`` gets, in its place, a Markdown table with one row per field
of :class:`gca.config.GCAConfig` (``dataclasses.fields``): its type and default, the values it accepts
(``gca.config.RANGES`` and ``gca.config.CHOICES``) and what it means — the ``#`` comments beside and above the field
in ``src/gca/config.py``, read with :mod:`tokenize`. The table is built from the code on every build, so it cannot
go stale; ``tests/test_docs_config_table.py`` checks it lists every field with its default.

Registered in ``mkdocs.yml`` under ``hooks:``.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import textwrap
import tokenize
from typing import Any

MARKER = "<!-- gca-config-fields -->"


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comments in ``cls``'s source: the one on its line, then the comment lines right above it."""
    source = textwrap.dedent(inspect.getsource(cls))
    names = {field.name for field in dataclasses.fields(cls)}
    comments: dict[str, str] = {}
    pending: list[str] = []  # comment lines since the last statement
    line_start = True  # no code yet on the current line
    current: str | None = None  # the field defined on the current line
    depth = 0  # bracket depth: a field's default may span lines
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        kind, text = token.type, token.string
        if kind == tokenize.COMMENT:
            comment = text.lstrip("#").strip()
            if line_start:
                pending.append(comment)
            elif current is not None:  # the field's own comment comes first, then the lines above it
                comments[current] = "; ".join(filter(None, [comment, comments.get(current, "")]))
            continue
        if kind in (tokenize.NL, tokenize.NEWLINE):
            if depth == 0:
                line_start, current = True, None
            continue
        if kind in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if kind == tokenize.OP and text in "([{":
            depth += 1
        elif kind == tokenize.OP and text in ")]}":
            depth -= 1
        if line_start:
            line_start = False
            if kind == tokenize.NAME and text in names and token.start[1] == 4:
                current = text
                if pending:
                    comments[current] = " ".join(pending)
            pending = []
    return comments


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def allowed(name: str, config_module: Any) -> str:
    """The values a field accepts, from the module's ``CHOICES`` and ``RANGES`` (and the fan-out limits)."""
    choices = getattr(config_module, "CHOICES", {})
    ranges = getattr(config_module, "RANGES", {})
    if name in choices:
        return ", ".join(f"`{choice}`" for choice in choices[name])
    if name in ranges:
        low, high, low_ok, high_ok = ranges[name]
        return f"{'[' if low_ok else '('}{_number(low)}, {_number(high)}{']' if high_ok else ')'}"
    if name == "fanout" and hasattr(config_module, "MAX_FANOUT"):
        hops = getattr(config_module, "MAX_HOPS", None)
        count = f"1 to {hops} values" if hops else "values"
        return f"{count}, each in [1, {config_module.MAX_FANOUT}] or −1 (all)"
    return ""


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_table() -> str:
    """The Markdown table of ``GCAConfig``'s fields (field | type | default | allowed | meaning)."""
    from gca import config as config_module

    cls = config_module.GCAConfig
    comments = field_comments(cls)
    rows = ["| Field | Type | Default | Allowed | Meaning |", "| --- | --- | --- | --- | --- |"]
    for field in dataclasses.fields(cls):
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
        default = _default(field)
        shown = "—" if default is dataclasses.MISSING else f"`{default!r}`"
        rows.append(
            f"| `{field.name}` | `{_cell(kind)}` | {_cell(shown)} | {_cell(allowed(field.name, config_module))} "
            f"| {_cell(comments.get(field.name, ''))} |"
        )
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: replace the marker with the table."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, config_table())
