"""Upstream's private names, in one adapter (``attncourse.upstream``), checked against the
installed nbclient, jupyter_client and nbgrader: a change upstream fails here, naming the
installed version and the pinned one, before it fails in grading."""

import ast
import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.utils.importstring import import_item

import attncourse
from attncourse.upstream import PRIVATE, REPLACED, REPLACED_SOURCE, Private

PACKAGE = Path(attncourse.__file__).parent
UPSTREAM = ("nbclient", "jupyter_client", "nbgrader", "nbconvert")
REQUIREMENTS = (PACKAGE.parent / "requirements.txt").read_text()


def versions(package):
    """'installed 0.11.0, pinned 0.11.0 in requirements.txt' (or 'not pinned')."""
    installed = importlib.metadata.version(package)
    pin = re.search(rf"^{package.replace('_', '[-_]')}==(\S+)", REQUIREMENTS, re.M | re.I)
    pinned = f"pinned {pin.group(1)} in requirements.txt" if pin else "not pinned"
    return f"{package} installed {installed}, {pinned}"


@pytest.mark.parametrize("private", PRIVATE, ids=lambda p: f"{p.owner.rsplit('.', 1)[1]}.{p.name}")
def test_each_private_name_is_where_the_adapter_was_written_for(private: Private):
    owner = import_item(private.owner)
    where = f"{private.owner}.{private.name} ({versions(private.package)}); used to {private.why}"
    if private.params is None:  # an attribute its instances set: named in the class's code
        source = "".join(inspect.getsource(c) for c in owner.__mro__ if c.__module__ != "builtins")
        assert f"self.{private.name}" in source, f"upstream changed: no {where}"
        return
    assert hasattr(owner, private.name), f"upstream changed: no {where}"
    params = tuple(inspect.signature(getattr(owner, private.name)).parameters)
    assert params == private.params, f"upstream changed: {where} now takes {params}"


@pytest.mark.parametrize(
    "replaced", REPLACED, ids=lambda p: f"{p.owner.rsplit('.', 1)[1]}.{p.name}"
)
def test_each_replaced_method_is_the_upstream_code_its_replacement_was_checked_against(
    replaced: Private,
):
    """A public method the course replaces: same parameters, and the same source (by digest)
    as when its replacement was compared with it; else the comparison must be made again."""
    import hashlib

    owner = import_item(replaced.owner)
    where = f"{replaced.owner}.{replaced.name} ({versions(replaced.package)})"
    method = getattr(owner, replaced.name)
    if method.__module__.startswith("attncourse"):  # replaced in this process: the original
        pytest.fail(f"{where} was replaced in the test process itself")
    params = tuple(inspect.signature(method).parameters)
    assert params == replaced.params, f"upstream changed: {where} now takes {params}"
    digest = hashlib.sha256(inspect.getsource(method).encode()).hexdigest()
    assert digest == REPLACED_SOURCE[f"{replaced.owner}.{replaced.name}"], (
        f"upstream changed the code of {where}, which the course replaces to {replaced.why}: "
        "compare the replacement with it again (the test its entry names) and "
        "record the new digest in attncourse.upstream.REPLACED_SOURCE"
    )


def test_the_adapter_names_the_pinned_version_of_each_package():
    """The pins this adapter was written for are the ones installed (the requirements)."""
    for package in {p.package for p in PRIVATE + REPLACED}:
        text = versions(package)
        pin = re.search(r"pinned (\S+)", text)
        assert pin is None or f"installed {pin.group(1)}," in text, text


def _upstream_classes(cls):
    return [c for c in cls.__mro__[1:] if c.__module__.split(".")[0] in UPSTREAM]


def _course_classes():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name == "attncourse.upstream" or "sandbox.launcher" in name:
            continue
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == name:
                yield value


def _written_names(cls):
    """The names the class's own source defines (traitlets' metaclass adds its own)."""
    body = ast.parse(inspect.getsource(cls).lstrip()).body[0].body
    names = {n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return names | {
        t.id
        for n in body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def test_no_course_class_overrides_a_private_name_of_upstream_but_the_adapter():
    """The adapter's mixins override them and hand the course a public hook."""
    overrides = [
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in _course_classes()
        for name in _written_names(cls)
        if name.startswith("_")
        and not name.startswith("__")
        and any(name in vars(base) for base in _upstream_classes(cls))
    ]
    assert overrides == []


def test_no_module_reaches_a_private_name_it_does_not_define_but_the_adapter():
    """Private attributes read anywhere in the package are the package's own, the adapter's,
    or of the standard library and torch (listed here)."""
    stdlib = {"_exit", "_run_exitfuncs", "_getframe", "_C"}
    defined, used = set(), {}
    trees = {p: ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
    for path, tree in trees.items():
        if path.name == "upstream.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and re.fullmatch(r"_[a-z]\w*", node.attr):
                used.setdefault(node.attr, f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert {k: v for k, v in used.items() if k not in defined | stdlib} == {}


def test_importing_nbformat_compiles_no_iri_grammar():
    """``make venv`` removes rfc3987-syntax (see the Makefile): with it, importing jsonschema,
    and so nbformat, compiled ~35 Earley grammars with lark, 1.0 s of every nbgrader command,
    grading process and Dask worker. A fresh interpreter imports nbformat without lark; the
    control, the package it imports when present, says what to look for."""
    code = (
        "import sys, nbformat, jsonschema\n"
        "print(sorted(m for m in ('lark', 'rfc3987_syntax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", (
        f"importing nbformat loaded {out.stdout.strip()}: rfc3987-syntax is installed "
        "(run make venv, which removes it)"
    )
    fmt = Path(importlib.util.find_spec("jsonschema._format").origin).read_text()
    assert "from rfc3987_syntax import" in fmt  # what jsonschema imports when it is there
