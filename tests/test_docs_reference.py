"""The API reference a researcher reads (docs/reference/, mkdocs.yml, docs/hooks/griffe_roles.py): one page per
package, the loggers among them, dunder methods kept out, code wrapped only at spaces, links that work from files,
and every parameter of the names a user calls described in a NumPy-style Parameters section."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGES = [
    "gca.graph",
    "gca.augment",
    "gca.nn",
    "gca.objective",
    "gca.train",
    "gca.evaluate",
    "gca.run",
    "gca.datasets",
    "gca.outputs",
    "gca.loggers",
    "gca.config",
    "gca.reproduce",
]


def _mkdocs() -> str:
    return (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def _pages() -> dict[str, str]:
    return {page.name: page.read_text(encoding="utf-8") for page in sorted((DOCS / "reference").glob("*.md"))}


def test_every_package_has_its_own_reference_page_in_the_navigation() -> None:
    pages, nav = _pages(), _mkdocs()
    for package in PACKAGES:
        name = package.removeprefix("gca.") + ".md"
        assert name in pages, package
        assert f"- {package}: reference/{name}" in nav, package
        assert f"::: {package}" in pages[name], package
    assert "- gca: reference/gca.md" in nav
    assert "::: " not in (DOCS / "api.md").read_text(encoding="utf-8")  # the overview renders no reference itself


def test_every_module_a_page_renders_exists_and_each_renders_once() -> None:
    seen: list[str] = []
    for text in _pages().values():
        seen += re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE)
    assert len(seen) == len(set(seen)), sorted(name for name in seen if seen.count(name) > 1)
    for name in seen:
        assert importlib.util.find_spec(name) is not None, name


def test_dunder_methods_are_filtered_and_init_is_merged_into_the_class() -> None:
    nav = _mkdocs()
    assert re.search(r'^\s+filters: \["!\^_"\]$', nav, flags=re.MULTILINE)
    assert re.search(r"^\s+merge_init_into_class: true$", nav, flags=re.MULTILINE)
    assert re.search(r"^\s+docstring_style: numpy$", nav, flags=re.MULTILINE)


def test_the_built_site_links_to_files_so_it_works_opened_from_disk() -> None:
    assert re.search(r"^use_directory_urls: false$", _mkdocs(), flags=re.MULTILINE)


def test_code_wraps_only_at_spaces() -> None:
    css = (DOCS / "css" / "extra.css").read_text(encoding="utf-8")
    rules = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)  # the comment may name what is not done
    assert "break-all" not in rules and "anywhere" not in rules and "break-word" not in rules
    assert re.search(r"white-space:\s*pre-wrap", rules)
    assert re.search(r"overflow-wrap:\s*normal", rules) and re.search(r"word-break:\s*normal", rules)
    # a browser also breaks after a hyphen, a slash or a bar: the script keeps such tokens in unwrapping spans
    assert re.search(r"\.gca-token\s*\{\s*white-space:\s*nowrap;", rules)
    assert re.search(r"^extra_javascript:\n  - js/code-wrap\.js$", _mkdocs(), flags=re.MULTILINE)
    script = (DOCS / "js" / "code-wrap.js").read_text(encoding="utf-8")
    assert 'span.className = "gca-token"' in script and "extractContents" in script


def test_a_wrapped_line_hangs_so_that_it_never_reads_as_a_new_command() -> None:
    """The rest of a wrapped line (the end of a trailing ``# comment`` above all) starts right of the line's own
    indentation, never where a command starts; a trailing comment moves whole; the copied text is unchanged."""
    rules = re.sub(r"/\*.*?\*/", "", (DOCS / "css" / "extra.css").read_text(encoding="utf-8"), flags=re.DOTALL)
    line = re.search(r"\.gca-line\s*\{(?P<body>[^}]*)\}", rules)
    assert line is not None
    body = line["body"]
    # inline-level: the newlines between lines stay text, so innerText (the copy button's) is the text as written
    assert re.search(r"display:\s*inline-block;", body) and re.search(r"width:\s*100%;", body)
    assert re.search(r"padding-left:\s*calc\(\(var\(--gca-indent, 0\) \+ 4\) \* 1ch\);", body)
    assert re.search(r"text-indent:\s*calc\(\(var\(--gca-indent, 0\) \+ 4\) \* -1ch\);", body)
    comment = re.search(r"\.gca-line \.c1\s*\{(?P<body>[^}]*)\}", rules)
    assert comment is not None and re.search(r"display:\s*inline-block;", comment["body"])
    script = (DOCS / "js" / "code-wrap.js").read_text(encoding="utf-8")
    assert 'span.className = "gca-line"' in script and '"--gca-indent"' in script
    assert "/[^\\n]+/g" in script  # a line's span holds no newline


# -- the parameters' descriptions -------------------------------------------------------------------------------

#: A NumPy-style section title: a line, then a line of dashes (as the reference's parser reads them).
SECTION = re.compile(r"^(?P<title>\S[^\n]*)\n-{3,}[ \t]*$", re.MULTILINE)
ITEM = re.compile(r"^(?P<names>\*{0,2}\w+(?:, \*{0,2}\w+)*)(?:\s*:.*)?$")


def described(doc: str) -> dict[str, str]:
    """Name → description of each item of ``doc``'s Parameters section (``a, b`` items give both names)."""
    doc = inspect.cleandoc(doc)
    sections = list(SECTION.finditer(doc))
    found: dict[str, str] = {}
    for i, match in enumerate(sections):
        if match["title"].strip() != "Parameters":
            continue
        end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
        names: list[str] = []
        for line in doc[match.end() : end].split("\n"):
            if (item := ITEM.match(line)) is not None:
                names = [name.lstrip("*") for name in item["names"].split(", ")]
                found.update(dict.fromkeys(names, ""))
            elif line.startswith((" ", "\t")) and line.strip():
                for name in names:
                    found[name] += line.strip() + " "
    return {name: text.strip() for name, text in found.items()}


def test_described_reads_numpy_sections() -> None:
    doc = """Prose.

    Parameters
    ----------
    a : int
        The a.
    b, c
        Both.
    **kwargs
        More.
    d

    Returns
    -------
    int
        Not a parameter.
    """
    assert described(doc) == {"a": "The a.", "b": "Both.", "c": "Both.", "kwargs": "More.", "d": ""}


def _public_api():  # noqa: ANN202 - a module loaded from docs/hooks
    spec = importlib.util.spec_from_file_location("public_api_hook", DOCS / "hooks" / "public_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


USER_FACING = _public_api().USER_FACING


def _cases() -> list[tuple[str, str]]:
    return [(module, name) for module, names in USER_FACING.items() for name in names]


@pytest.mark.parametrize(("module", "name"), _cases(), ids=[f"{m}.{n}" for m, n in _cases()])
def test_every_parameter_of_a_user_facing_name_is_described(module: str, name: str) -> None:
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    obj = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if inspect.isclass(obj):  # NumPy's convention: the constructor's parameters in the class docstring
        doc = inspect.getdoc(obj) or ""
        if obj.__init__ is not object.__init__ and obj.__init__.__doc__ and "----------" in obj.__init__.__doc__:
            doc += "\n\n" + inspect.cleandoc(obj.__init__.__doc__)
        signature = inspect.signature(obj)
    else:
        doc = inspect.getdoc(obj) or ""
        signature = inspect.signature(obj)
    names = [p.name for p in signature.parameters.values() if p.name not in ("self", "cls")]
    found = described(doc)
    missing = [n for n in names if not found.get(n)]
    assert not missing, f"{module}.{name}: no description for {missing}"
    unknown = sorted(set(found) - set(names))
    assert not unknown, f"{module}.{name}: describes {unknown}, which its signature lacks"


def test_the_extension_completes_a_parameters_section_with_the_signature() -> None:
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_roles_hook", DOCS / "hooks" / "griffe_roles.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    text = "Prose.\n\nParameters\n----------\na : int\n    The a.\n\nReturns\n-------\nint\n    x"
    assert hook.complete_parameters(text, ["a", "b"]) == (
        "Prose.\n\nParameters\n----------\na : int\n    The a.\nb\n\nReturns\n-------\nint\n    x"
    )
    assert hook.complete_parameters("Prose.", ["a"]) == "Prose.\n\nParameters\n----------\na"
    assert hook.complete_parameters("Prose.", []) == "Prose."
    described_both = "P.\n\nParameters\n----------\na, b\n    Both.\n"
    assert hook.complete_parameters(described_both, ["a", "b"]) == described_both


def _hook(name: str):  # noqa: ANN202 - a module loaded from docs/hooks
    spec = importlib.util.spec_from_file_location(f"{name}_hook", DOCS / "hooks" / f"{name}.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


#: A rendered reference entry, as mkdocstrings writes it: a Parameters table (a described and an undescribed row),
#: then a Returns table whose row has no description either (not a parameter).
RENDERED = """
<h3 id="gca.thing.f" class="doc doc-heading"><span>f</span></h3>
<p><span class="doc-section-title">Parameters:</span></p>
    <table><tbody>
      <tr class="doc-section-item"><td><code>a</code></td><td><code>int</code></td>
        <td><div class="doc-md-description"><p>The <code>a</code>.</p></div></td></tr>
      <tr class="doc-section-item"><td><code>b</code></td><td><code>int</code></td>
        <td><div class="doc-md-description">
        </div></td></tr>
    </tbody></table>
<p><span class="doc-section-title">Returns:</span></p>
    <table><tbody>
      <tr class="doc-section-item"><td><code>int</code></td><td><div class="doc-md-description"></div></td></tr>
    </tbody></table>
"""


def test_a_parameter_without_a_description_fails_the_strict_build(caplog: pytest.LogCaptureFixture) -> None:
    assert re.search(r"^hooks:\n(?:  - .+\n)*  - docs/hooks/parameters_described\.py$", _mkdocs(), flags=re.MULTILINE)
    hook = _hook("parameters_described")
    assert hook.undescribed(RENDERED) == ["gca.thing.f.b"]
    assert hook.undescribed(RENDERED.replace("\n        </div>", "Now described.</div>")) == []

    class Page:
        class file:  # noqa: N801 - MkDocs's page.file
            src_uri = "reference/thing.md"

    with caplog.at_level("WARNING", logger="mkdocs"):
        assert hook.on_page_content(RENDERED, page=Page(), config=None, files=None) == RENDERED
    # a warning on MkDocs's logger: what mkdocs build --strict counts and fails on
    assert [(r.name, r.levelname) for r in caplog.records] == [("mkdocs.hooks.parameters_described", "WARNING")]
    assert "gca.thing.f.b" in caplog.records[0].getMessage()


def test_make_docs_fails_on_a_warning() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    build = [line for line in makefile.splitlines() if "mkdocs build" in line]
    assert build and all("--strict" in line for line in build)
    # --quiet sets MkDocs's log level to ERROR: the warnings --strict counts are then never counted
    assert not any("--quiet" in line or re.search(r"\s-q\b", line) for line in build)
