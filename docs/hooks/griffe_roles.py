"""Griffe extension: render the docstrings' reST markup as Markdown in the API reference.

The docstrings are written for Sphinx: cross-reference roles (``:class:`~gca.train.batches.BatchSource```,
``:func:`.sparse.normalized_adjacency```, ``:mod:`gca.objective```), ``double-backquoted`` literals and ``::``
literal blocks. mkdocstrings renders docstrings as Markdown, where a role would appear literally, so this extension
rewrites every docstring of a loaded package before it is parsed (the source files are not touched):

* a role whose target resolves to an object of the package becomes a cross-reference to the object's canonical
  path, emitted as an *optional* autorefs reference: a link when the object is documented on some page of the
  site, plain code otherwise (so an undocumented target never fails ``mkdocs build --strict``);
* a role whose target is outside the package (``torch.nn.Module``) or cannot be resolved becomes plain code;
* ````x```` becomes ```x```, and a paragraph ending in ``::`` followed by an indented block becomes a fenced block.

Targets resolve as Sphinx's Python domain does: ``~`` shows the last component only, ``Title <target>`` gives an
explicit title, a leading ``!`` suppresses the link, and a name is looked up in the enclosing class, then the
enclosing module and its parent packages, then as an absolute path; a target that still is not found (a leading
``.`` included) is matched as a suffix of the package's object paths, the one nearest the docstring winning.

Parameters are described in NumPy-style sections (``Parameters`` underlined with dashes, a class's constructor in the
class docstring); for each name of the public API (``public_api.py``) the extension completes the section with the
signature's parameters it does not describe, so that the reference's table lists every one of them. Other names
show the parameters their docstring describes.

Registered in ``mkdocs.yml`` under the Python handler's ``options: extensions:``.
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from typing import Any

import griffe


def _public_paths() -> set[str]:
    """The public API's object paths (``public_api.py``, beside this file)."""
    spec = importlib.util.spec_from_file_location("gca_public_api", Path(__file__).with_name("public_api.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.public_paths()


#: ``:class:`target```, ``:py:func:`target```, … (the roles Sphinx's Python domain defines).
ROLE_RE = re.compile(
    r"(?<![\w`:]):(?:py:)?(?P<role>class|func|meth|mod|data|attr|exc|obj|const|type|any):`(?P<content>[^`]+)`"
)
#: Any other role (``:ref:`…```, ``:doc:`…```): shown as code, never linked.
OTHER_ROLE_RE = re.compile(r"(?<![\w`:]):[a-z]+(?::[a-z]+)?:`(?P<content>[^`]+)`")
#: ````literal```` (not touching a further backquote; the content holds none and may wrap, not across paragraphs).
LITERAL_RE = re.compile(r"(?<!`)``(?P<code>(?:[^`\n]|\n(?![ \t]*\n))+?)``(?!`)")
#: ``Title <target>`` inside a role.
EXPLICIT_RE = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def _code(text: str) -> str:
    return f"<code>{html.escape(text, quote=False)}</code>"


class _Index:
    """The objects of one package: exact lookup through the module collection, and suffix lookup."""

    def __init__(self, package: griffe.Module) -> None:
        self.package = package
        self.collection = package.modules_collection
        self.paths: set[str] = set()
        self._collect(package)

    def _collect(self, obj: griffe.Object) -> None:
        self.paths.add(obj.path)
        for member in obj.members.values():
            if member.is_alias:
                continue
            self._collect(member)

    def lookup(self, path: str) -> str | None:
        """The canonical path of the object at ``path`` (through imports), or ``None``."""
        try:
            obj = self.collection.get_member(path) if "." in path else self.collection[path]
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
        try:
            canonical = obj.canonical_path
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
        return canonical if canonical in self.paths else None

    def suffix(self, name: str, near: str) -> str | None:
        """The package's object path ending in ``.name`` nearest to the path ``near`` (``None`` if tied)."""
        found = [path for path in self.paths if path.endswith("." + name)]
        if not found:
            return None

        def shared(path: str) -> int:
            count = 0
            for a, b in zip(path.split("."), near.split("."), strict=False):
                if a != b:
                    break
                count += 1
            return count

        found.sort(key=lambda path: (-shared(path), path.count(".")))
        best = found[0]
        if len(found) > 1 and (shared(found[1]), found[1].count(".")) == (shared(best), best.count(".")):
            return None
        return best


def _scopes(obj: griffe.Object) -> list[str]:
    """Where a name in ``obj``'s docstring is looked up: the class, the module, the parent packages."""
    scopes = []
    current: Any = obj if (obj.is_class or obj.is_module) else obj.parent
    while current is not None:
        scopes.append(current.path)
        current = current.parent
    return scopes


def resolve(target: str, obj: griffe.Object, index: _Index) -> str | None:
    """The canonical path that ``target`` (as written in ``obj``'s docstring, without ``~``) names, or ``None``."""
    relative = target.startswith(".")
    name = target.lstrip(".")
    if not name:
        return None
    for scope in _scopes(obj):
        if found := index.lookup(f"{scope}.{name}"):
            return found
    if not relative and (found := index.lookup(name)):
        return found
    return index.suffix(name, obj.path)


def render_role(content: str, obj: griffe.Object, index: _Index) -> str:
    """The Markdown (inline HTML) for one role's content."""
    explicit = EXPLICIT_RE.match(content)
    if explicit and explicit["title"]:
        title, target = explicit["title"], explicit["target"].strip()
    else:
        target = content.strip()
        title = ""
    no_link = target.startswith("!")
    target = target.lstrip("!")
    short = target.startswith("~")
    target = target.lstrip("~")
    if not title:
        title = target.lstrip(".")
        if short:
            title = title.rsplit(".", 1)[-1]
    path = None if no_link else resolve(target, obj, index)
    if path is None:
        return _code(title)
    return f'<autoref identifier="{html.escape(path)}" optional>{_code(title)}</autoref>'


def _literal_blocks(text: str) -> str:
    """``text::`` followed by an indented block → ``text:`` and a fenced code block."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and not line.strip().startswith((">>>", "...")):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            base = len(line) - len(line.lstrip())
            block_start = j
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > base):
                j += 1
            block = lines[block_start:j]
            while block and not block[-1].strip():
                block.pop()
            if block:
                head = line.rstrip()[:-2].rstrip()
                if head.strip():
                    out.append(head + ":")
                    out.append("")
                indent = min(len(b) - len(b.lstrip()) for b in block if b.strip())
                pad = " " * base
                out.append(pad + "```text")
                out.extend(pad + b[indent:] if b.strip() else "" for b in block)
                out.append(pad + "```")
                out.append("")
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def rewrite(text: str, obj: griffe.Object, index: _Index) -> str:
    """One docstring's reST markup as Markdown."""
    text = ROLE_RE.sub(lambda m: render_role(m["content"], obj, index), text)
    text = OTHER_ROLE_RE.sub(lambda m: _code(m["content"]), text)
    text = LITERAL_RE.sub(lambda m: f"`{m['code']}`", text)
    if "::" in text:
        text = _literal_blocks(text)
    return text


#: A NumPy-style section's title: a line, then a line of dashes.
SECTION_RE = re.compile(r"^(?P<title>\S[^\n]*)\n-{3,}[ \t]*$", re.MULTILINE)
#: A parameter item's first line in a Parameters section: ``name``, ``a, b`` or ``name : type``, at column 0.
ITEM_RE = re.compile(r"^(?P<names>\*{0,2}\w+(?:, \*{0,2}\w+)*)(?:\s*:.*)?$")


def signature_names(func: griffe.Function) -> list[str]:
    """``func``'s named parameters (neither ``self``/``cls`` nor ``*args``/``**kwargs``)."""
    return [
        parameter.name
        for parameter in func.parameters
        if parameter.name not in ("self", "cls")
        and parameter.kind not in (griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword)
    ]


def complete_parameters(text: str, names: list[str]) -> str:
    """``text`` (a NumPy-style docstring) whose Parameters section lists every one of ``names``: the names it does
    not describe are added at the section's end with no description, and a docstring with no such section gets one,
    so that the reference's table shows each parameter (name, type and default from the signature)."""
    sections = list(SECTION_RE.finditer(text))
    for i, match in enumerate(sections):
        if match["title"].strip() != "Parameters":
            continue
        end = sections[i + 1].start() if i + 1 < len(sections) else len(text)
        body = text[match.end() : end]
        listed = {
            name.lstrip("*")
            for line in body.split("\n")
            if (item := ITEM_RE.match(line))
            for name in item["names"].split(", ")
        }
        missing = [name for name in names if name not in listed]
        if not missing:
            return text
        head = text[:end].rstrip()
        tail = text[end:]
        return head + "\n" + "\n".join(missing) + ("\n\n" + tail if tail else "\n")
    if not names:
        return text
    fields = "Parameters\n----------\n" + "\n".join(names)
    return f"{text.rstrip()}\n\n{fields}" if text.strip() else fields


class ReSTRoles(griffe.Extension):
    """Rewrite every docstring of a package once the package is completely loaded, and complete each documented
    function's (and each documented class's constructor's) NumPy-style Parameters section with the parameters of its
    signature that it does not describe.

    ``skip_parameters``: paths of objects that get no parameter section (``gca.config.GCAConfig``, whose fields have
    their own table). Only the public API's objects are completed.
    """

    def __init__(self, skip_parameters: list[str] | None = None) -> None:
        super().__init__()
        self.skip_parameters = set(skip_parameters or ())
        self.public = _public_paths()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        index = _Index(pkg)
        self._walk(pkg, index)

    def _walk(self, obj: griffe.Object, index: _Index) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, obj, index)
            if obj.path in self.public and obj.path not in self.skip_parameters:
                self._add_parameters(obj)
        for member in list(obj.members.values()):
            if not member.is_alias:
                self._walk(member, index)

    def _add_parameters(self, obj: griffe.Object) -> None:
        docstring = obj.docstring
        if obj.is_function:
            docstring.value = complete_parameters(docstring.value, signature_names(obj))
        elif obj.is_class and "__init__" in obj.members and not obj.members["__init__"].is_alias:
            init = obj.members["__init__"]
            names = signature_names(init)
            if init.docstring is not None:  # completed as a function of its own
                return
            if any(m["title"].strip() == "Parameters" for m in SECTION_RE.finditer(docstring.value)):
                # the constructor's parameters described in the class docstring (NumPy's convention)
                docstring.value = complete_parameters(docstring.value, names)
            elif names:
                init.docstring = griffe.Docstring(
                    complete_parameters("", names),
                    parent=init,
                    parser=docstring.parser,
                    parser_options=docstring.parser_options,
                )
