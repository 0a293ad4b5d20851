"""The documentation site opened from disk (file://), as the README recommends: its search works there. The
browser check builds a two-page site with the project's configuration and runs where MkDocs (the ``docs`` extra) and
a Chromium or Chrome are installed; elsewhere it is skipped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _mkdocs() -> str:
    return (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_search_is_built_to_work_from_disk_without_a_network() -> None:
    config = _mkdocs()
    # the offline plugin writes the index as a script (search/search_index.js), which a file:// page can load
    assert re.search(r"^plugins:\n  - search\n  - offline$", config, flags=re.MULTILINE)
    # and the shim that runs the search worker in an iframe comes from the site, not from unpkg.com
    polyfills = re.search(r"^extra:\n  polyfills:\n((?:    - \S+\n)+)", config, flags=re.MULTILINE)
    assert polyfills is not None
    paths = re.findall(r"- (\S+)", polyfills[1])
    assert paths == ["js/iframe-worker-shim.js"]
    shim = (DOCS / paths[0]).read_text(encoding="utf-8")
    assert 'location.protocol==="file:"&&(window.Worker=o)' in shim
    assert "Permission is hereby granted" in shim  # its MIT licence travels with it
    assert "unpkg.com" not in re.sub(r"/\*.*?\*/", "", shim, flags=re.DOTALL)


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        if found := shutil.which(name):
            return found
    return None


#: Two pages for the browser check: a code block whose trailing comment wraps on a narrow page, and a word only the
#: second page holds.
PAGES = {
    "index.md": "# Home\n\n```bash\nmake test    # creates .venv on first use, runs the test suite\n```\n",
    "other.md": "# Other\n\nThe word zanzibarite is on this page only.\n",
}


def _small_site(tmp_path: Path) -> Path:
    """The site as mkdocs.yml builds it (theme, plugins, scripts, styles), with :data:`PAGES` as its pages, built
    into ``tmp_path/site``: seconds instead of the reference's minute."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(_mkdocs())
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    for folder in ("css", "js"):
        shutil.copytree(DOCS / folder, docs / folder)
    plugins = [p for p in config["plugins"] if isinstance(p, str)]  # search, offline: not the API reference
    assert plugins == ["search", "offline"]
    small = {
        key: config[key]
        for key in (
            "site_name",
            "use_directory_urls",
            "theme",
            "extra",
            "extra_css",
            "extra_javascript",
            "markdown_extensions",
        )
        if key in config
    }
    small.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"), plugins=plugins, nav=list(PAGES))
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small), encoding="utf-8")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    return tmp_path / "site"


def test_search_finds_pages_in_the_site_opened_from_disk(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome on PATH")
    site = _small_site(tmp_path)
    assert (site / "search" / "search_index.js").is_file()
    # ?q= opens the search with that query when the page loads (Material): the results are in the DOM
    page = (site / "index.html").as_uri() + "?q=zanzibarite"
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert 'class="md-search__input' in dom
    meta = re.search(r'class="md-search-result__meta">([^<]*)<', dom)
    assert meta is not None and meta[1] == "1 matching document", meta and meta[1]
    assert re.search(r'<a href="[^"]*other\.html[^"]*" class="md-search-result__link"', dom)
    # the page's code block: its line in a hanging span (js/code-wrap.js), the text unchanged
    block = re.search(r"<pre[^>]*>.*?<code[^>]*>(.*?)</code></pre>", dom, flags=re.DOTALL)
    assert block is not None and 'class="gca-line"' in block[1]
    text = re.sub(r"<[^>]+>", "", block[1])
    assert text.strip() == "make test    # creates .venv on first use, runs the test suite"
