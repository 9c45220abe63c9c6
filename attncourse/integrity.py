"""Integrity scan of submitted notebooks, outside the kernel, before any cell runs.

Scores never depend on it: the judge (``attncourse.judge``) decides every test
outside the kernel. This scan makes an attempt on the grader, or code that is
not allowed, visible to the graders, who decide what it costs.
It reads each cell's source — never runs it — and reports:

- ``import``: an import beyond the course's (``import``/``from … import``,
  ``__import__``, ``importlib``); repeating an import of the first cell (``torch``,
  ``nn``, ``np``) or of another provided cell (``matplotlib.pyplot as plt``) is allowed;
- ``rebinding``: assigning or deleting attributes of ``torch``, ``np``, ``nn``,
  ``builtins``, ``attncourse`` or anything else the course's cells define
  (``torch.allclose = …``, ``setattr(torch, …)``, ``torch.Tensor.__eq__ = …``),
  also through an alias (``T = torch.Tensor; T.__eq__ = …``) or ``type(x)``;
  rebinding those names, or ``isinstance``, ``AssertionError`` and the other
  builtins a test relies on, at the top level of a cell (or via ``global``);
  defining comparison or dispatch hooks (``__eq__``, ``__torch_function__``, …)
  or subclassing ``Tensor``/``ndarray``;
- ``interpreter``: reaching the interpreter's internals — ``sys``/``os``/``gc``/
  ``ctypes``/``inspect``/``builtins``/``__builtins__``/``linecache``, frames and
  code objects, ``globals()``/``locals()``/``vars()``, ``get_ipython`` and
  shell/IPython magics other than ``%time``/``%timeit``/``%capture``/``%matplotlib``
  (whose code is scanned like the rest);
- ``dynamic code``: ``exec``, ``eval``, ``compile``;
- ``locked cell edited``: a locked cell whose source differs from the gradebook's
  (nbgrader restores the cell before running it, but the edit is still a finding).

Only student code is scanned for the rules: answer cells, and cells the
student added or whose nbgrader metadata was stripped. A cell whose source is
exactly a course cell's (as released, or as recorded in the gradebook) is
trusted, wherever it sits.

**Parts.** Each finding is charged to a *part*: the answer cell it is in (or
the closest answer cell above it in the submission; above the first answer
cell, the first one), together with the graded cells that follow that answer
cell in the source notebook up to the next answer cell — the tests of that
answer. The order comes from the instructor's notebook, not the submission,
so moving cells around does not move points. :class:`FlagIntegrity` flags the
part's autograded cells for review in formgrader and writes the findings as
the comment of the part's answer cell, which formgrader and the feedback show.
Scores do not depend on the scan: the judge computes every verdict outside the
student's kernel, so a finding is something for a grader to read (copied code,
an attempt on the grader), and the grader decides, with a manual score where
the answer does not deserve the tests' points.
"""

import ast
import io
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor

from attncourse.submissions import grade_id

METADATA_KEY = "attncourse"
COMMENT_HEADER = "Integrity check:"

BASE_PROTECTED = {
    "torch",
    "np",
    "numpy",
    "nn",
    "builtins",
    "__builtins__",
    "attncourse",
    "isinstance",
    "issubclass",
    "type",
    "AssertionError",
    "Exception",
    "BaseException",
    "getattr",
    "hasattr",
    "setattr",
    "callable",
}
INTERPRETER_MODULES = {
    "sys",
    "os",
    "gc",
    "ctypes",
    "inspect",
    "builtins",
    "__builtins__",
    "linecache",
    "subprocess",
    "importlib",
    "atexit",
    "shutil",
}
INTERPRETER_ATTRIBUTES = {
    "_getframe",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "f_code",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "__globals__",
    "__code__",
    "__closure__",
    "__subclasses__",
    "__bases__",
    "__mro__",
    "__loader__",
    "__spec__",
    "__import__",
}
INTERPRETER_CALLS = {"globals", "locals", "vars", "get_ipython", "breakpoint", "__import__"}
DYNAMIC_CALLS = {"exec", "eval", "compile"}
HOOK_METHODS = {
    "__eq__",
    "__ne__",
    "__bool__",
    "__instancecheck__",
    "__subclasscheck__",
    "__torch_function__",
    "__torch_dispatch__",
    "__array_ufunc__",
    "__array_function__",
}
ARRAY_TYPES = {"Tensor", "ndarray", "Parameter"}
SAFE_MAGICS = {"time", "timeit", "capture", "matplotlib"}


@dataclass(frozen=True)
class Finding:
    """One integrity finding: where it is, which part it costs, what it is."""

    cell: int
    grade_id: str | None
    part: str | None
    kind: str
    line: int | None
    detail: str

    def describe(self):
        where = f"cell {self.cell + 1}" + (f" ({self.grade_id})" if self.grade_id else "")
        line = f", line {self.line}" if self.line else ""
        return f"{self.kind}: {self.detail} [{where}{line}]"


@dataclass(frozen=True)
class CourseCell:
    """A cell of the course's notebook as the gradebook (or the release) records it."""

    grade_id: str
    cell_type: str
    locked: bool
    answer: bool
    graded: bool
    sources: frozenset  # normalized, as recorded and without its hidden tests

    @classmethod
    def of(cls, grade_id, cell_type, locked, answer, graded, source):
        versions = {normalize(source), normalize(without_hidden_tests(source))}
        return cls(grade_id, cell_type, locked and not answer, answer, graded, frozenset(versions))


def normalize(source):
    """Source text compared modulo trailing whitespace on lines and blank lines at the ends."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def without_hidden_tests(source):
    """``source`` with nbgrader's hidden-test region removed (what students were shown)."""
    cell = nbformat.v4.new_code_cell(source)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


class CourseNotebook:
    """The trusted cells of one notebook, its parts, allowed imports and protected names."""

    def __init__(self, cells):
        self.cells = {cell.grade_id: cell for cell in cells}
        self.order = [cell.grade_id for cell in cells]
        self.trusted = {s for cell in cells if not cell.answer for s in cell.sources}
        answers = [gid for gid in self.order if self.cells[gid].answer]
        self.first_part = answers[0] if answers else None
        self.part_of = {}
        part = self.first_part
        for gid in self.order:
            if self.cells[gid].answer:
                part = gid
            self.part_of[gid] = part
        self.allowed_imports = set()
        self.protected = set(BASE_PROTECTED)
        for cell in cells:
            if cell.answer or cell.cell_type != "code":
                continue
            for source in cell.sources:
                tree = _parse(source)
                if tree is None:
                    continue
                bindings = _import_bindings(tree)
                self.protected |= {name for name, _ in bindings}
                self.protected |= {
                    node.name
                    for node in tree.body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                }
                if not cell.graded:  # a provided cell: students see (and may repeat) its imports
                    self.allowed_imports |= set(bindings)

    def part_grades(self, part):
        """grade_ids of the autograded and manually graded cells charged to ``part``."""
        return [g for g in self.order if self.part_of[g] == part and self.cells[g].graded]

    @classmethod
    def from_notebook(cls, nb):
        """From a release (or source) notebook's cells and nbgrader metadata."""
        cells = []
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if "grade_id" not in meta:
                continue
            cells.append(
                CourseCell.of(
                    meta["grade_id"],
                    cell.cell_type,
                    bool(meta.get("locked")),
                    bool(meta.get("solution")),
                    bool(meta.get("grade")),
                    cell.source,
                )
            )
        return cls(cells)

    @classmethod
    def from_gradebook(cls, gradebook, notebook_id, assignment_id, order):
        """From the gradebook's source cells, in the order of the ``order`` grade_ids."""
        notebook = gradebook.find_notebook(notebook_id, assignment_id)
        sources = {cell.name: cell for cell in notebook.source_cells}
        graded = {cell.name for cell in notebook.grade_cells}
        answers = {cell.name for cell in notebook.solution_cells}
        ordered = [g for g in order if g in sources] + sorted(set(sources) - set(order))
        cells = [
            CourseCell.of(
                gid,
                sources[gid].cell_type,
                bool(sources[gid].locked),
                gid in answers,
                gid in graded,
                sources[gid].source,
            )
            for gid in ordered
        ]
        return cls(cells)


def scan_notebook(nb, course):
    """Every :class:`Finding` in submitted notebook ``nb`` against the trusted ``course`` cells."""
    findings = []
    part = course.first_part
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        ref = course.cells.get(gid)
        if ref is not None:
            part = course.part_of[gid]
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        text = normalize(source)
        hits = []
        if ref is not None and ref.locked:
            if text not in ref.sources:
                hits = [("locked cell edited", None, "the source differs from the course's")]
        elif cell.cell_type == "code" and text not in course.trusted:
            hits = scan_source(source, course.protected, course.allowed_imports)
        findings += [Finding(index, gid, part, *hit) for hit in hits]
    return findings


def scan_source(source, protected=frozenset(BASE_PROTECTED), allowed_imports=frozenset()):
    """``(kind, line, detail)`` for every rule the code in one cell breaks."""
    python = _to_python(source)
    tree = _parse(python) if python is not None else None
    if tree is None:
        return _scan_tokens(python or source, protected)
    return _Scanner(set(protected), set(allowed_imports)).scan(tree)


def _to_python(source):
    """The cell as IPython would run it (magics turned into calls), or None."""
    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return None


def _parse(source):
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _import_bindings(tree):
    """``(name bound, module path)`` for every import statement in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out.append((bound, alias.name if alias.asname else bound))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                module = f"{'.' * node.level}{node.module or ''}"
                out.append((alias.asname or alias.name, f"{module}.{alias.name}"))
    return out


def _root(node):
    """The name an attribute/subscript/call chain starts from, or None."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _chain_attributes(node):
    names = []
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return names


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _is_magic(call):
    """True for ``get_ipython().run_line_magic(…)``/``run_cell_magic(…)``, what IPython makes of ``%``."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in {"run_line_magic", "run_cell_magic"}
        and isinstance(func.value, ast.Call)
        and getattr(func.value.func, "id", None) == "get_ipython"
    )


def _target_nodes(node):
    """Every target expression (unpacking tuples/lists/starred) of an assignment-like node."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _target_nodes(elt)
    elif isinstance(node, ast.Starred):
        yield from _target_nodes(node.value)
    else:
        yield node


class _Scanner(ast.NodeVisitor):
    def __init__(self, protected, allowed_imports):
        self.protected = protected
        self.allowed_imports = allowed_imports
        self.aliases = set()
        self.findings = []
        self.depth = 0

    def scan(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and self._is_protected_chain(node.value):
                for target in node.targets:
                    self.aliases |= {t.id for t in _target_nodes(target) if isinstance(t, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for bound, module in _import_bindings(node):
                    if module.split(".")[0] in self.protected | INTERPRETER_MODULES:
                        self.aliases.add(bound)
        self.visit(tree)
        return sorted(set(self.findings), key=lambda f: (f[1] or 0, f[0], f[2]))

    def add(self, kind, node, detail):
        self.findings.append((kind, getattr(node, "lineno", None), detail))

    def _is_protected_chain(self, node):
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        return _root(node) in self.protected

    def _check_target(self, target, verb):
        for node in _target_nodes(target):
            if isinstance(node, ast.Name):
                if self.depth == 0 and node.id in self.protected:
                    self.add("rebinding", node, f"{verb} the name {node.id!r}")
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                shared = self.protected | self.aliases | {"type", "globals", "locals", "vars"}
                if _root(node) in shared or any(map(_is_dunder, _chain_attributes(node))):
                    self.add("rebinding", node, f"{verb} {ast.unparse(node)}")

    # --- scopes: a top-level rebinding matters, a local variable does not
    def _scoped(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        self._check_binding(node.name, node)
        for deco in node.decorator_list:
            self.visit(deco)
        self._visit_arguments(node.args)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_arguments(self, args):
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_Lambda(self, node):
        self._scoped(node)

    def visit_ClassDef(self, node):
        self._check_binding(node.name, node)
        for base in node.bases:
            if (_chain_attributes(base) or [getattr(base, "id", "")])[0] in ARRAY_TYPES:
                self.add("rebinding", base, f"a subclass of {ast.unparse(base)}")
        for stmt in node.body:
            if (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                and stmt.name in HOOK_METHODS
            ):
                self.add("rebinding", stmt, f"defines the hook {stmt.name} in class {node.name}")
        for item in [*node.bases, *node.keywords, *node.decorator_list]:
            self.visit(item)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def _check_binding(self, name, node):
        if self.depth == 0 and name in self.protected:
            self.add("rebinding", node, f"redefines the name {name!r}")

    def visit_Global(self, node):
        for name in node.names:
            if name in self.protected:
                self.add("rebinding", node, f"declares {name!r} global to rebind it")

    visit_Nonlocal = visit_Global

    # --- statements that bind or write
    _TARGETS = {
        ast.Assign: ("targets", "assigns"),
        ast.AugAssign: ("target", "assigns"),
        ast.AnnAssign: ("target", "assigns"),
        ast.NamedExpr: ("target", "assigns"),
        ast.Delete: ("targets", "deletes"),
        ast.For: ("target", "loops into"),
        ast.AsyncFor: ("target", "loops into"),
        ast.withitem: ("optional_vars", "binds"),
    }

    def _visit_targets(self, node):
        field, verb = self._TARGETS[type(node)]
        targets = getattr(node, field)
        for target in targets if isinstance(targets, list) else [targets]:
            if target is not None:
                self._check_target(target, verb)
        self.generic_visit(node)

    visit_Assign = visit_AugAssign = visit_AnnAssign = visit_NamedExpr = _visit_targets
    visit_Delete = visit_For = visit_AsyncFor = visit_withitem = _visit_targets

    def visit_ExceptHandler(self, node):
        if node.name:
            self._check_binding(node.name, node)
        self.generic_visit(node)

    def visit_Import(self, node):
        self._check_import(node)

    visit_ImportFrom = visit_Import

    def _check_import(self, node):
        for bound, module in _import_bindings(node):
            if (bound, module) not in self.allowed_imports:
                self.add(
                    "import",
                    node,
                    f"imports {module} as {bound!r} (the course's cells do not import it)",
                )

    # --- names and calls
    def visit_Name(self, node):
        if node.id in {"__builtins__", "builtins"}:
            self.add("interpreter", node, f"uses {node.id}")
        elif node.id == "importlib":
            self.add("import", node, "uses importlib")

    def visit_Attribute(self, node):
        if node.attr in INTERPRETER_MODULES or node.attr in INTERPRETER_ATTRIBUTES:
            self.add("interpreter", node, f"reaches {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name == "__import__":
            self.add("import", node, "calls __import__")
        elif name in DYNAMIC_CALLS:
            self.add("dynamic code", node, f"calls {name}()")
        elif name in INTERPRETER_CALLS:
            self.add("interpreter", node, f"calls {name}()")
        elif name in {"setattr", "delattr"} or (
            isinstance(func, ast.Attribute) and func.attr in {"__setattr__", "__delattr__"}
        ):
            self._check_setattr(node)
        elif name in {"getattr", "hasattr"} or (
            isinstance(func, ast.Attribute) and func.attr == "__getattribute__"
        ):
            self._check_getattr(node)
        if _is_magic(node):
            self._check_magic(node)
            for arg in node.args:
                self.visit(arg)
            return
        self.generic_visit(node)

    def _check_setattr(self, node):
        if not node.args:
            return
        obj = node.args[0]
        name = node.args[1] if len(node.args) > 1 else None
        literal = name.value if isinstance(name, ast.Constant) else None
        root = _root(obj)
        if (
            root in self.protected | self.aliases | {"type"}
            or (root != "self" and not isinstance(literal, str))
            or (isinstance(literal, str) and _is_dunder(literal))
        ):
            self.add("rebinding", node, f"calls {ast.unparse(node.func)} on {ast.unparse(obj)}")

    def _check_getattr(self, node):
        """getattr on a protected module with a computed name can reach anything (``torch.sys``)."""
        if len(node.args) < 2 or isinstance(node.args[1], ast.Constant):
            if (
                len(node.args) >= 2
                and node.args[1].value in INTERPRETER_MODULES | INTERPRETER_ATTRIBUTES
            ):
                self.add("interpreter", node, f"reaches {ast.unparse(node)}")
            return
        if _root(node.args[0]) in self.protected | self.aliases:
            self.add("interpreter", node, f"looks up a computed name with {ast.unparse(node)}")

    def _check_magic(self, node):
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        magic = args[0] if args else None
        if magic not in SAFE_MAGICS:
            self.add("interpreter", node, f"runs the IPython magic %{magic}")
            return
        code = args[-1] if len(args) > 1 else None
        if isinstance(code, str):
            for kind, _line, detail in scan_source(code, self.protected, self.allowed_imports):
                self.findings.append((kind, node.lineno, f"{detail} (in %{magic})"))


_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "|=", "&=", ":="}


def _scan_tokens(source, protected):
    """Findings for a cell that does not parse: suspicious names, imports and rebinding lines."""
    findings = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = _tokens_until_error(source)
    line_tokens = {}
    for tok in tokens:
        if tok.type == tokenize.NAME:
            row = tok.start[0]
            line_tokens.setdefault(row, []).append(tok)
            if tok.string == "import":
                findings.append(("import", row, "an import (the cell does not parse)"))
            elif tok.string in INTERPRETER_MODULES | INTERPRETER_ATTRIBUTES | INTERPRETER_CALLS:
                findings.append(
                    ("interpreter", row, f"uses {tok.string} (the cell does not parse)")
                )
            elif tok.string in DYNAMIC_CALLS:
                findings.append(
                    ("dynamic code", row, f"uses {tok.string} (the cell does not parse)")
                )
        elif tok.type == tokenize.OP:
            line_tokens.setdefault(tok.start[0], []).append(tok)
    for row, toks in line_tokens.items():
        first = toks[0]
        ops = [t.string for t in toks if t.type == tokenize.OP]
        assign = next((i for i, t in enumerate(toks) if t.string in _ASSIGN_OPS), None)
        if first.type == tokenize.NAME and first.string in protected and assign is not None:
            what = "attributes of" if "." in ops[: ops.index(toks[assign].string)] else "the name"
            findings.append(
                ("rebinding", row, f"assigns {what} {first.string!r} (the cell does not parse)")
            )
    return sorted(set(findings), key=lambda f: (f[1] or 0, f[0], f[2]))


def _tokens_until_error(source):
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            out.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


# --- nbgrader plugins ------------------------------------------------------------------


def source_notebook(coursedir, assignment_id, notebook_id):
    """The instructor's notebook in the course's ``source/`` folder, or None."""
    path = Path(coursedir.format_path(coursedir.source_directory, ".", assignment_id))
    path = path / f"{notebook_id}.ipynb"
    return nbformat.read(path, as_version=4) if path.exists() else None


def course_notebook(coursedir, gradebook, info):
    """The :class:`CourseNotebook` of the notebook an nbgrader preprocessor is working on."""
    source = source_notebook(coursedir, info["assignment"], info["notebook"])
    order = [g for g in map(grade_id, source.cells) if g] if source else []
    return CourseNotebook.from_gradebook(gradebook, info["notebook"], info["assignment"], order)


def findings_of(nb):
    """The findings an :class:`IntegrityScan` stored in a (sanitized or autograded) notebook."""
    stored = nb.metadata.get(METADATA_KEY, {}).get("integrity", [])
    return [Finding(**f) for f in stored]


class IntegrityScan(NbGraderPreprocessor):
    """Sanitize stage: scan the submission against the gradebook and store the findings.

    Runs before ``OverwriteCells`` restores the locked cells; the findings go
    into the notebook's metadata, where :class:`FlagIntegrity` reads them
    after the autograder has saved its scores.
    """

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            course = course_notebook(CourseDirectory(parent=self), gb, info)
        findings = scan_notebook(nb, course)
        nb.metadata.setdefault(METADATA_KEY, {})["integrity"] = [asdict(f) for f in findings]
        for finding in findings:
            self.log.warning("Integrity finding for %s: %s", info["student"], finding.describe())
        return nb, resources


class FlagIntegrity(NbGraderPreprocessor):
    """Autograde stage, after ``SaveAutoGrades``: flag every part with findings for review.

    The tests' scores stand (the judge computed them outside the kernel); each
    autograded cell of the part needs manual grading, and the part's answer cell
    gets a comment listing the findings, shown in formgrader and the feedback.
    Re-running autograde re-applies this from the fresh scan; manual scores and
    manual comments are never touched.
    """

    def preprocess(self, nb, resources):
        findings = findings_of(nb)
        if not findings:
            return nb, resources
        info = resources["nbgrader"]
        ids = info["notebook"], info["assignment"], info["student"]
        with Gradebook(info["db_url"]) as gb:
            course = course_notebook(CourseDirectory(parent=self), gb, info)
            by_part = {}
            for finding in findings:
                by_part.setdefault(finding.part, []).append(finding)
            for part, items in by_part.items():
                flagged = []
                for gid in course.part_grades(part):
                    grade = gb.find_grade(gid, *ids)
                    if grade.auto_score is None:
                        continue
                    flagged.append(f"{gid} (tests gave {grade.auto_score:g}/{grade.max_score:g})")
                    grade.needs_manual_grade = True
                comment = flagged_comment(items, flagged)
                try:
                    gb.find_comment(part, *ids).auto_comment = comment
                except MissingEntry:
                    self.log.warning("No comment cell %s for %s", part, info["student"])
                self.log.warning("Flagged %s for %s", ", ".join(flagged) or "nothing", ids[2])
            gb.db.commit()
        return nb, resources


def flagged_comment(findings, flagged):
    """The gradebook comment of a part with findings (shown in formgrader and the feedback)."""
    text = "\n".join([COMMENT_HEADER, ""] + [f"- {f.describe()}" for f in findings])
    if flagged:
        text += f"\n\nFlagged for review: {', '.join(flagged)}."
        text += "\nThe tests' score stands unless a grader enters a manual score."
    return text


def scan_submissions(course_dir, assignment, students=None):
    """student -> notebook -> findings for the submitted notebooks of ``assignment`` (for the CLI).

    Uses the course's gradebook, so the assignment must have been released.
    """
    coursedir = CourseDirectory(root=str(Path(course_dir).resolve()))
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    out = {}
    with Gradebook(coursedir.db_url) as gb:
        for path in sorted(submitted.glob(f"*/{assignment}/*.ipynb")):
            student = path.parent.parent.name
            if students and student not in students:
                continue
            info = {"assignment": assignment, "notebook": path.stem}
            try:
                course = course_notebook(coursedir, gb, info)
            except MissingEntry:
                continue
            try:
                nb = nbformat.read(path, as_version=4)
            except Exception as err:
                out.setdefault(student, {})[path.stem] = [
                    Finding(0, None, None, "unreadable", None, f"{type(err).__name__}: {err}")
                ]
                continue
            out.setdefault(student, {})[path.stem] = scan_notebook(nb, course)
    return out


def print_findings(results):
    """Print ``scan_submissions``'s result; return the number of findings."""
    count = 0
    for student, notebooks in results.items():
        for notebook, findings in notebooks.items():
            for finding in findings:
                print(f"{student}/{notebook}: {finding.describe()}")
                count += 1
    print(f"{count} integrity findings in {len(results)} submissions")
    return count
