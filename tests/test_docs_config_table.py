"""The configuration reference page's table of GCAConfig's fields (docs/hooks/config_table.py) lists every field
with its default."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

from gca.config import CHOICES, RANGES, GCAConfig

ROOT = Path(__file__).resolve().parents[1]


def _hook():
    spec = importlib.util.spec_from_file_location("config_table_hook", ROOT / "docs" / "hooks" / "config_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(table: str) -> dict[str, list[str]]:
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells
    return rows


def test_every_field_is_listed_with_its_type_and_default() -> None:
    rows = _rows(_hook().config_table())
    fields = dataclasses.fields(GCAConfig)
    assert list(rows) == [field.name for field in fields]
    for field in fields:
        _, kind, default, _, _ = rows[field.name]
        assert kind == f"`{field.type}`"
        assert default == f"`{field.default!r}`"


def test_allowed_values_come_from_ranges_and_choices() -> None:
    rows = _rows(_hook().config_table())
    for name, choices in CHOICES.items():
        assert rows[name][3] == ", ".join(f"`{choice}`" for choice in choices)
    for name in RANGES:
        assert rows[name][3].startswith(("[", "(")), name
    assert rows["p_tau"][3] == "(0, 1)"  # both bounds excluded
    assert rows["p_e1"][3] == "[0, 1)"


def test_meaning_comes_from_the_source_comments() -> None:
    rows = _rows(_hook().config_table())
    assert "GCA–T ablation" in rows["edge_drop"][4]  # the comment on the field's line
    assert "GraphSAGE's aggregator" in rows["sage_aggregator"][4]  # the comment lines above the field
    assert "\\|" in rows["centrality"][4]  # a "|" in a comment cannot split the Markdown row


def test_the_config_reference_page_holds_the_marker_and_the_hook_replaces_it() -> None:
    hook = _hook()
    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page)
    assert hook.MARKER not in rendered
    assert "| `p_e1` | `float` | `0.2` |" in rendered
