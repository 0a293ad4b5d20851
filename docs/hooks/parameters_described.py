"""MkDocs hook: every parameter in the API reference has a description.

The reference's Parameters tables list every parameter of a public name's signature, described or not
(``docs/hooks/griffe_roles.py`` adds the ones a docstring leaves out, so none is hidden; ``public_api.py`` lists the
names). This hook reads each rendered page and warns, once per parameter, of a row whose description is empty —
naming the object and the parameter — so that ``mkdocs build --strict`` (``make docs``, CI) fails until the
docstring describes it.

Registered in ``mkdocs.yml`` under ``hooks:``.
"""

from __future__ import annotations

import logging
import re
from html import unescape
from typing import Any

log = logging.getLogger("mkdocs.hooks.parameters_described")

#: An object's heading in the reference: its anchor is the object's path.
HEADING_RE = re.compile(r'<h[1-6] id="(?P<path>[^"]+)" class="doc doc-heading"')
#: A Parameters section: its title, then the table.
TABLE_RE = re.compile(
    r'<span class="doc-section-title">Parameters:</span></p>\s*<table>(?P<table>.*?)</table>', re.DOTALL
)
ROW_RE = re.compile(r'<tr class="doc-section-item">(?P<row>.*?)</tr>', re.DOTALL)
NAME_RE = re.compile(r"<code>(?P<name>.*?)</code>", re.DOTALL)
DESCRIPTION_RE = re.compile(r'<div class="doc-md-description">(?P<text>.*?)</div>', re.DOTALL)
TAG_RE = re.compile(r"<[^>]+>")


def undescribed(page: str) -> list[str]:
    """``object.parameter`` for each row of a Parameters table of the rendered ``page`` with no description text."""
    headings = [(match.start(), match["path"]) for match in HEADING_RE.finditer(page)]
    found = []
    for table in TABLE_RE.finditer(page):
        owner = next((path for start, path in reversed(headings) if start < table.start()), "?")
        for row in ROW_RE.finditer(table["table"]):
            description = DESCRIPTION_RE.search(row["row"])
            text = unescape(TAG_RE.sub("", description["text"])).strip() if description else ""
            if not text:
                name = NAME_RE.search(row["row"])
                found.append(f"{owner}.{unescape(TAG_RE.sub('', name['name'])) if name else '?'}")
    return found


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    for name in undescribed(html):
        log.warning("%s: the parameter %s has no description in its docstring", page.file.src_uri, name)
    return html
