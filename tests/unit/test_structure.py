"""The package's shape: imports point one way, the kernel side stays small, the config resolves.

Read from the source with ``ast`` (nothing of the package runs but the imports the config
and the judge's bootstrap make); no kernel starts.
"""

import ast
import functools
import importlib
import re
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Configurable
from traitlets.utils.importstring import import_item

import attncourse
from attncourse.cells import is_test_cell
from attncourse.course import ROOT, assignments, course_config, notebook_path
from attncourse.judge import verdict
from attncourse.sandbox import KERNEL_MODULES
from attncourse.sandbox.forkserver import kernel_safe
from attncourse.sandbox.kernelmanager import SandboxKernelManager

PACKAGE = Path(attncourse.__file__).parent

# Lowest first: a module may import its own layer and those below it, never one above.
LAYERS = {
    "names and defaults": [
        "attncourse",
        "attncourse.constants",
        "attncourse.upstream",
        "attncourse.dangerous",
    ],
    "course files and notebooks": [
        "attncourse.course",
        "attncourse.cells",
        "attncourse.parts",
        "attncourse.pointing",
        "attncourse.pointers",
        "attncourse.ipythoncode",
        "attncourse.runrecord",
        "attncourse.handoffs",
        "attncourse.status",
        "attncourse.names",
        "attncourse.gradebook",
        "attncourse.roster",
        "attncourse.plainfiles",
        "attncourse.markscheme",
        "attncourse.safemarkdown",
        "attncourse.mathml",
        "attncourse.pagetemplates",
        "attncourse.integrity",
    ],
    "judge and sandbox": [
        "attncourse.judge",
        "attncourse.grading",
        "attncourse.sandbox",
    ],
    "nbgrader plugins": [
        "attncourse.preprocessors",
        "attncourse.tolerantexporter",
        "attncourse.readingrepairs",
        "attncourse.gradebookview",
        "attncourse.feedbackexporter",
        "attncourse.export",
        "attncourse.exchange",
        "attncourse.lms",
        "attncourse.prover",
    ],
    "commands": [
        "attncourse.worker",
        "attncourse.cluster",
        "attncourse.gpulanes",
        "attncourse.pipeline",
        "attncourse.gradingsummary",
        "attncourse.feedback",
        "attncourse.report",
        "attncourse.similarity",
        "attncourse.formgrader",
        "attncourse.workload",
    ],
    "command line": ["attncourse.cli"],
}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _ancestors(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(name):
    """The package's modules that ``name`` imports, at module level or inside a function
    (with the packages Python runs on the way, but for the packages ``name`` itself sits in:
    Python ran those before it)."""
    path = SOURCES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [base]
            targets += [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in SOURCES:
                found |= {target, *(set(_ancestors(target)) - set(_ancestors(name)))}
    return found - {name}


GRAPH = {name: imports_of(name) for name in SOURCES}


def layer_of(name):
    """The rank of the layer of the longest entry of LAYERS that is ``name`` or holds it."""
    matches = [
        (len(member), rank)
        for rank, members in enumerate(LAYERS.values())
        for member in members
        if name == member or (member != "attncourse" and name.startswith(member + "."))
    ]
    return max(matches)[1] if matches else None


def test_every_module_has_a_layer():
    assert [name for name in SOURCES if layer_of(name) is None] == []


def test_no_import_cycles():
    """No module imports, directly or through others, a module that imports it back."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(name):  # Tarjan's strongly connected components
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(GRAPH[name]):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert cycles == []


def test_no_import_runs_back_up_a_layer():
    upward = [
        f"{name} ({list(LAYERS)[layer_of(name)]}) imports {other} ({list(LAYERS)[layer_of(other)]})"
        for name, others in GRAPH.items()
        for other in others
        if layer_of(other) > layer_of(name)
    ]
    assert upward == []


def test_the_kernel_side_imports_only_the_kernel_side():
    assert set(KERNEL_MODULES) <= set(SOURCES), set(KERNEL_MODULES) - set(SOURCES)
    reached, todo = set(), list(KERNEL_MODULES)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += GRAPH[name]
    assert reached == set(KERNEL_MODULES), reached - set(KERNEL_MODULES)


def test_the_kernel_side_holds_nothing_of_the_grading_code():
    grading = ("attncourse.grading", "attncourse.judge")
    assert not [m for m in KERNEL_MODULES if m.startswith(grading)]
    assert {"attncourse.sandbox.kernelmanager", "attncourse.sandbox.proctree"}.isdisjoint(
        KERNEL_MODULES
    )


def test_the_fork_server_never_preloads_grading_code():
    assert all(kernel_safe(name) for name in SandboxKernelManager().preload)
    for name in [
        "attncourse.judge.checks",
        "attncourse.grading.attention_variants",
        "attncourse.judge",
    ]:
        assert not kernel_safe(name), name


def test_only_the_command_line_reaches_the_development_tools():
    """``devtools/`` (demo, bench, the tests' submissions) sits above the package: only ``cli``
    imports it, when a verb runs, so nothing that grades depends on a development tool."""
    reaching = [
        name
        for name, path in SOURCES.items()
        if name != "attncourse.cli"
        and re.search(r"^\s*(from|import) devtools\b", path.read_text(), re.M)
    ]
    assert reaching == []
    assert not (PACKAGE / "demo.py").exists() and not (PACKAGE / "autograde.py").exists()


def test_packages_init_modules_import_nothing():
    """Except a grading package's, which imports its checks to hold ``CHECKS`` (see below)."""
    for name, path in SOURCES.items():
        if path.name == "__init__.py" and name not in GRADING_PACKAGES:
            tree = ast.parse(path.read_text())
            assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], (
                name
            )


def test_the_package_docstring_maps_every_module():
    listed = set(re.findall(r"^ +``(\w+)/?``", attncourse.__doc__, re.MULTILINE))
    top = {name.split(".")[1] for name in SOURCES if name != "attncourse"}
    assert top - listed == set()
    assert listed - top == set()


def _python_files():
    yield from SOURCES.values()
    yield from sorted((ROOT / "devtools").glob("*.py"))
    yield from sorted((ROOT / "tests").rglob("*.py"))
    yield from sorted((ROOT / "demo").glob("*.py"))
    yield ROOT / "nbgrader_config.py"


def _is_suppress(item):
    call = item.context_expr
    func = call.func if isinstance(call, ast.Call) else None
    return getattr(func, "attr", getattr(func, "id", None)) == "suppress"


def _imports_in(nodes):
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                yield inner
            elif isinstance(inner, ast.Call):
                func = inner.func
                if getattr(func, "attr", getattr(func, "id", None)) in (
                    "import_module",
                    "__import__",
                ):
                    yield inner


def test_no_import_is_wrapped_in_suppress():
    """An import that fails must say so: none sits in a ``contextlib.suppress`` block."""
    silenced = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.With) and any(map(_is_suppress, node.items)):
                silenced += [f"{path.name}:{i.lineno}" for i in _imports_in(node.body)]
    assert silenced == []


# ------------------------------------------------------------------ grading packages

GRADING = PACKAGE / "grading"
GRADING_PACKAGES = {
    f"attncourse.grading.{path.parent.name}": path.parent
    for path in sorted(GRADING.glob("*/__init__.py"))
}
SHAPE = ("__init__", "tolerances", "references")  # and one checks module per group of parts
MAX_LINES = 300


def _more_references(path):
    """The modules ``references_<topic>`` that a package's references are split into where one
    module would pass MAX_LINES, in name order."""
    return sorted(p.stem for p in path.glob("references_*.py"))


def _checks_modules(package):
    """The checks modules of a grading package in course order: in the order of the first check
    each contributes to ``CHECKS`` (the ``__init__`` imports them sorted by name)."""
    tree = ast.parse((GRADING_PACKAGES[package] / "__init__.py").read_text())
    home = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }
    (checks,) = [n for n in tree.body if isinstance(n, ast.Assign)]
    order = [home[n.id] for n in ast.walk(checks.value) if isinstance(n, ast.Name) and n.id in home]
    return list(dict.fromkeys(order))


def test_every_assignment_has_a_grading_package_of_one_shape():
    """``grading/`` holds one package per assignment, each with ``tolerances``,
    ``references`` (and the ``references_<topic>`` modules split from it), its checks modules
    and an ``__init__``, and nothing else."""
    assert {p.name for p in GRADING.iterdir() if p.name != "__pycache__"} == {
        "__init__.py",
        *(path.name for path in GRADING_PACKAGES.values()),
    }
    assert sorted(p.name for p in GRADING_PACKAGES.values()) == sorted(assignments())
    for package, path in GRADING_PACKAGES.items():
        modules = {p.stem for p in path.glob("*.py")}
        assert set(SHAPE) <= modules, (package, set(SHAPE) - modules)
        checks = _checks_modules(package)
        others = modules - set(SHAPE) - set(_more_references(path))
        assert checks and set(checks) == others, (package, checks, modules)
        assert not [p for p in path.iterdir() if p.is_dir() and p.name != "__pycache__"], package


def test_grading_modules_are_small():
    sizes = {
        p.relative_to(GRADING).as_posix(): len(p.read_text().splitlines())
        for p in GRADING.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize("package", sorted(GRADING_PACKAGES))
def test_a_grading_package_init_holds_only_checks(package):
    """A docstring, the imports of its own checks (and a wrapper from ``judge.checks`` or
    ``functools``), and one assignment: ``CHECKS``, grade_id -> check."""
    tree = ast.parse((GRADING_PACKAGES[package] / "__init__.py").read_text())
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    imports = [n for n in body if isinstance(n, ast.Import | ast.ImportFrom)]
    others = [n for n in body if n not in imports]
    assert [ast.unparse(n.targets[0]) for n in others if isinstance(n, ast.Assign)] == ["CHECKS"]
    assert len(others) == 1, [ast.unparse(n)[:60] for n in others]
    assert all(
        isinstance(n, ast.ImportFrom)
        and (n.level == 1 or n.module in ("attncourse.judge.checks", "functools"))
        for n in imports
    ), [ast.unparse(n) for n in imports]


@pytest.mark.parametrize("package", sorted(GRADING_PACKAGES))
def test_inside_a_grading_package_imports_point_one_way(package):
    """tolerances <- references <- references_<topic> <- the checks modules in course order <-
    __init__: a module imports only those before it, and nothing of another assignment."""
    modules = (
        "tolerances",
        "references",
        *_more_references(GRADING_PACKAGES[package]),
        *_checks_modules(package),
    )
    order = [f"{package}.{m}" for m in modules]
    order.append(package)
    upward = [
        f"{name} imports {other}"
        for rank, name in enumerate(order)
        for other in GRAPH[name]
        if other.startswith("attncourse.grading.")
        and other not in ("attncourse.grading", package)
        and (other not in order or order.index(other) >= rank)
    ]
    assert upward == []


@pytest.mark.parametrize("package", sorted(GRADING_PACKAGES))
def test_every_threshold_says_where_it_comes_from(package):
    """Each constant of ``tolerances.py`` sits in a commented block (its error bound and
    the margins measured) or carries a comment on its line."""
    lines = (GRADING_PACKAGES[package] / "tolerances.py").read_text().splitlines()
    tree = ast.parse("\n".join(lines))

    def block(number):  # the run of non-blank lines around line ``number`` (1-based)
        start = end = number - 1
        while start > 0 and lines[start - 1].strip():
            start -= 1
        while end + 1 < len(lines) and lines[end + 1].strip():
            end += 1
        return lines[start : end + 1]

    constants = [n for n in tree.body if isinstance(n, ast.Assign)]
    assert constants
    bare = [
        ast.unparse(n.targets[0])
        for n in constants
        if "#" not in lines[n.lineno - 1]
        and not any(line.lstrip().startswith("#") for line in block(n.lineno))
    ]
    assert bare == []


# ------------------------------------------------------------------ nbgrader_config.py

CONFIG = course_config(ROOT)
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _dotted_names():
    return sorted({s for section in CONFIG.values() for s in _strings(section) if DOTTED.match(s)})


@pytest.mark.parametrize("name", _dotted_names())
def test_every_dotted_name_in_the_config_imports(name):
    assert import_item(name) is not None


def test_the_config_names_the_course_plugins():
    names = _dotted_names()
    assert len([n for n in names if n.startswith("attncourse.")]) >= 12, names


@functools.cache
def _configurables():
    """Class name -> the configurable classes of that name nbgrader and the package define."""
    for module in ("nbgrader.apps", "nbgrader.exchange", "nbconvert.exporters", *SOURCES):
        importlib.import_module(module)
    classes, todo = {}, [Configurable]
    while todo:
        cls = todo.pop()
        classes.setdefault(cls.__name__, []).append(cls)
        todo += cls.__subclasses__()
    return classes


@pytest.mark.parametrize("section", sorted(CONFIG))
def test_every_setting_in_the_config_is_a_configurable_trait(section):
    """A misspelled setting is silently ignored by traitlets: each must name a real one."""
    candidates = _configurables().get(section, [])
    assert candidates, f"no configurable class is called {section}"
    for key in CONFIG[section]:
        assert any(key in cls.class_trait_names(config=True) for cls in candidates), (section, key)


def test_every_sandbox_setting_is_set_in_the_config():
    """An instructor finds every setting of a kernel in nbgrader_config.py, with its comment:
    set, or (a limit) listed at its default by ``make limits`` (``tests/unit/test_limits.py``)."""
    own = SandboxKernelManager.class_own_traits(config=True)
    limits = SandboxKernelManager.class_own_traits(limit=True)
    assert limits
    assert set(own) - set(limits) - set(CONFIG.SandboxKernelManager) == set()
    listed = (ROOT / "nbgrader_config.py").read_text()
    assert [n for n in limits if f"# c.SandboxKernelManager.{n} = " not in listed] == []


# ------------------------------------------------------------------ the judge's bootstrap


@pytest.mark.parametrize("assignment", assignments())
def test_the_judge_loads_every_assignments_checks(assignment):
    """``verdict.checks_of`` (all the grader ever loads of ``attncourse.grading``) finds a
    check for every test cell of the assignment."""
    checks = verdict.checks_of(assignment)
    cells = nbformat.read(notebook_path(ROOT, "source", assignment), as_version=4).cells
    tests = {c.metadata.nbgrader["grade_id"] for c in cells if is_test_cell(c)}
    assert tests <= set(checks)
    assert all(callable(check) for check in checks.values())


def test_no_test_module_imports_another():
    """Helpers the tests share live in helper modules (``casetable``, ``sandboxkit``,
    ``toy_course``, ...) and fixtures in ``conftest.py``: importing a test module would run
    its module-level setup and collect its tests twice."""
    tests = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    # Read as text, so code a test hands a kernel or a subprocess as a string counts too.
    found = [
        f"{path.name} imports {name}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for name in re.findall(r"^\s*(?:from|import) (test_\w+)", path.read_text(), re.M)
        if name in tests
    ]
    assert found == []


def test_fixtures_are_found_not_imported():
    """A fixture several modules use lives in ``conftest.py``; importing one into a test module
    (which needs ``noqa: F401``, the import being unused to ruff) is how it was not."""
    imported = [
        f"{path.name}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != "test_structure.py"  # which names the marker
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "noqa: F401" in line
    ]
    assert imported == []


def _module_fixtures(tree):
    """Names of the fixtures of module or package scope the module defines."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        for d in node.decorator_list
        if isinstance(d, ast.Call)
        and any(
            k.arg == "scope" and getattr(k.value, "value", None) in ("module", "package")
            for k in d.keywords
        )
    }


def _is_group_mark(node):
    return isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "xdist_group"


def _tests_spread_over_workers(tree):
    """The tests that take one of the module's shared fixtures but no ``xdist_group`` (on
    themselves or in the module's ``pytestmark``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "pytestmark" for t in node.targets
        ):
            if any(_is_group_mark(n) for n in ast.walk(node.value)):
                return []
    shared = _module_fixtures(tree)
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test")
        and shared & {a.arg for a in node.args.args}
        and not any(_is_group_mark(n) for d in node.decorator_list for n in ast.walk(d))
    ]


def test_a_module_fixture_is_built_on_one_worker():
    """make test runs under ``--dist loadgroup``: tests with no group go to any worker, and
    each worker builds a module's fixture again (test_rulecheck_tamper's autograde run twice,
    40 s each, before its tests were one group)."""
    spread = {
        str(path.relative_to(ROOT)): names
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        if (names := _tests_spread_over_workers(ast.parse(path.read_text())))
    }
    assert spread == {}
    control = '@pytest.fixture(scope="module")\ndef f():\n    pass\n\ndef test_a(f):\n    pass\n'
    assert _tests_spread_over_workers(ast.parse(control)) == ["test_a"]
    grouped = 'pytestmark = [pytest.mark.xdist_group("g")]\n' + control
    assert _tests_spread_over_workers(ast.parse(grouped)) == []
    marked = control.replace("def test_a", '@pytest.mark.xdist_group("g")\ndef test_a')
    assert _tests_spread_over_workers(ast.parse(marked)) == []


# ------------------------------------------------------------------ state and hand-offs

MUTATORS = {
    "append",
    "appendleft",
    "add",
    "clear",
    "discard",
    "extend",
    "extendleft",
    "insert",
    "pop",
    "popitem",
    "remove",
    "setdefault",
    "update",
}
CONTAINER_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"}


def _module_containers(tree):
    """Names a module binds at its top level to a dict, list or set (literal or made by a call)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        literal = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
        called = isinstance(value, ast.Call) and (
            getattr(value.func, "id", None) or getattr(value.func, "attr", None)
        )
        if isinstance(value, literal) or called in CONTAINER_CALLS:
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def state_written_after_import(source):
    """(line, what) for each ``global`` statement and each change a function makes to a
    container the module holds at its top level: state that outlives the call."""
    tree = ast.parse(source)
    found = [
        (n.lineno, f"global {', '.join(n.names)}")
        for n in ast.walk(tree)
        if isinstance(n, ast.Global)
    ]
    containers = _module_containers(tree)
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = fn.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        local |= {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for node in ast.walk(fn):
            changed = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name):
                    changed = [(node.func.value.id, f".{node.func.attr}()")]
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if not isinstance(node, ast.AugAssign) else [node.target]
                changed = [
                    (t.value.id, "[...]")
                    for t in targets
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                ]
            for name, how in changed:
                if name in containers and name not in local:
                    found.append((node.lineno, f"{name}{how} in {fn.name}()"))
    return found


def test_no_module_global_is_written_after_import():
    """What must live per process is an object passed in (a grading process's ``Grader``, the
    ``ForkServers`` and ``SpareKernel`` it hands autograde, a run's ``GradingPool`` on a Dask
    worker, ``Refusals``), never a module global a function rebinds or fills."""
    found = {
        name: hits
        for name, path in SOURCES.items()
        if (hits := state_written_after_import(path.read_text()))
    }
    assert found == {}


def test_the_state_check_finds_globals_and_filled_containers():
    """Its control: the shapes the package had (``global _spare``, ``_idle.setdefault(...)``,
    ``_servers[key] = ...``) are found; a local of the same name, or a constant, is not."""
    source = (
        "_spare = None\n_idle = {}\n_servers = dict()\nLIMITS = (1, 2)\n"
        "def take():\n    global _spare\n    _spare = 1\n"
        "def park(run):\n    _idle.setdefault(run, []).append(1)\n"
        "def start(key):\n    _servers[key] = 2\n"
        "def fine(key):\n    _idle = {}\n    _idle[key] = 1\n    return LIMITS[0]\n"
    )
    assert [what for _, what in state_written_after_import(source)] == [
        "global _spare",
        "_idle.setdefault() in park()",
        "_servers[...] in start()",
    ]


def test_each_boundary_carries_a_frozen_dataclass():
    """The hand-offs of a submission's route are the frozen dataclasses of ``handoffs``, and
    the functions at each boundary are annotated with them: the client builds the bundle and
    the job, the Dask task takes them and returns a TaskResult, the grading process takes a
    GradingRequest and returns an AutogradeResult."""
    import dataclasses
    import typing

    from attncourse import handoffs, pipeline
    from attncourse.worker import grading, task

    for name in (
        "CourseBundle",
        "GradingJob",
        "GradingRequest",
        "AutogradeResult",
        "TaskResult",
        "StudentResult",
    ):
        cls = getattr(handoffs, name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
    boundaries = {
        pipeline.course_bundle: {"return": handoffs.CourseBundle},
        pipeline.grading_job: {"return": handoffs.GradingJob},
        task.grade_on_worker: {
            "bundle": handoffs.CourseBundle,
            "job": handoffs.GradingJob,
            "return": handoffs.TaskResult,
        },
        task.GradingProcess.grade: {"job": handoffs.GradingJob},
        grading.Grader.grade: {
            "request": handoffs.GradingRequest,
            "return": handoffs.AutogradeResult,
        },
    }
    for function, expected in boundaries.items():
        hints = typing.get_type_hints(function)
        assert {k: hints.get(k) for k in expected} == expected, function.__qualname__
    job = {f.name: f.type for f in dataclasses.fields(handoffs.GradingJob)}
    assert "record" in job and "refused" not in job  # refusals travel in the run record only


def _unannotated_public_functions(source):
    """Qualified names of the public functions and methods in ``source`` that lack an
    annotation of a parameter (``self``/``cls`` aside) or of the return."""
    missing = []

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("_") and node.name != "__init__":
                    continue
                a = node.args
                params = [
                    *a.posonlyargs,
                    *a.args,
                    *a.kwonlyargs,
                    *filter(None, [a.vararg, a.kwarg]),
                ]
                if in_class and params and params[0].arg in ("self", "cls"):
                    params = params[1:]
                if node.returns is None or any(p.annotation is None for p in params):
                    missing.append(f"{prefix}{node.name}")

    visit(ast.parse(source).body, "", False)
    return missing


def _typed_modules():
    """The modules ``make lint`` type-checks, as pyproject.toml's [tool.mypy] lists them."""
    import tomllib

    files = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    paths = [PACKAGE.parent / f for f in files]
    return sorted(p for path in paths for p in (path.rglob("*.py") if path.is_dir() else [path]))


def test_the_type_checked_modules_annotate_every_public_function():
    """mypy checks what is annotated; this checks that every public function of the route of a
    submission (pipeline, worker, sandbox, the hand-offs, the GPU lanes), of the judge and of
    every assignment's hidden checks is."""
    typed = _typed_modules()
    names = {module_name(p) for p in typed}
    assert {"attncourse.pipeline", "attncourse.handoffs", "attncourse.worker.task"} <= names
    assert {"attncourse.sandbox.launcher", "attncourse.gpulanes"} <= names
    assert {f"attncourse.judge.{m}" for m in ("agent", "rules", "walk", "remote")} <= names
    assert {f"{p}.references" for p in GRADING_PACKAGES} <= names
    assert {
        f"{p}.{m}" for p, path in GRADING_PACKAGES.items() for m in _more_references(path)
    } <= names
    missing = {
        module_name(p): m for p in typed if (m := _unannotated_public_functions(p.read_text()))
    }
    assert missing == {
        # its source ships verbatim to students (coursecheck/failure.py), where typing is not
        # imported
        "attncourse.judge.checks": ["fail"],
        # the notebook's provided cell, word for word (tests/grading/test_instances.py)
        "attncourse.grading.attention_worksheet.references": ["worksheet_instance"],
    }
    control = (
        "def f(x) -> int: ...\ndef g(x: int): ...\ndef _h(x): ...\nclass C:\n    def m(self): ..."
    )
    assert _unannotated_public_functions(control) == ["f", "g", "C.m"]
