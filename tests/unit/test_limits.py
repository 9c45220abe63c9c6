"""Each limit is defined once (its trait, tagged ``limit``, with ``help=``), and the README's and
``nbgrader_config.py``'s lists of limits are generated from the traits (``make limits``)."""

import ast

from traitlets.config import Config

from attncourse import constants
from attncourse.course import ROOT, course_config
from attncourse.preprocessors.resilientexecute import ResilientExecute
from attncourse.sandbox.kernelmanager import SandboxKernelManager
from devtools import limits


def test_the_committed_lists_of_limits_equal_a_fresh_generation():
    """Run ``make limits`` after changing a limit's trait, and commit both files."""
    stale = [path.name for path, text in limits.generated().items() if path.read_text() != text]
    assert stale == []


def test_every_limit_of_a_kernel_and_of_a_notebook_is_listed_with_its_help():
    found = {(cls, name) for cls, name, _ in limits.limits()}
    assert {
        ("SandboxKernelManager", "memory_mb"),
        ("SandboxKernelManager", "cgroup_memory_mb"),
        ("ResilientExecute", "timeout"),
        (
            "KernelLife",
            "notebook_budget",
        ),  # the kernel's life: c.ResilientExecute.notebook_budget works too
        ("ResilientExecute", "max_reply_bytes"),
    } <= found
    assert all(len(trait.help.split()) >= 4 for _, _, trait in limits.limits())
    readme = (ROOT / "README.md").read_text()
    config = (ROOT / "nbgrader_config.py").read_text()
    for cls, name, _ in limits.limits():
        assert f"| `c.{cls}.{name}` |" in readme
        assert f"# c.{cls}.{name} = " in config


def test_the_config_lists_each_limit_at_the_traits_default():
    """The listed lines, uncommented, set every limit to what the trait gives by itself."""
    lines = [line[2:] for line in limits.config_lines() if line.startswith("# c.")]
    config = Config()
    namespace = {"c": config}
    exec(compile(ast.parse("\n".join(lines)), "limits", "exec"), namespace)
    assert ResilientExecute(config=config).timeout == ResilientExecute().timeout == 120
    for cls in (ResilientExecute, SandboxKernelManager):
        for name, trait in cls.class_own_traits(limit=True).items():
            assert config[cls.__name__][name] == trait.default_value, (cls.__name__, name)


def test_the_course_config_grades_with_the_traits_limits():
    config = course_config(ROOT)
    execute, km = ResilientExecute(config=config), SandboxKernelManager(config=config)
    assert (execute.timeout, execute.notebook_budget, execute.max_output_bytes) == (
        120,
        900.0,
        1_000_000,
    )
    assert (km.memory_mb, km.cgroup_memory_mb, km.tmpfs_mb) == (3072, 3072, 256)


def test_no_limit_is_copied_into_the_constants():
    names = {name.upper() for _, name, _ in limits.limits()}
    copied = [n for n in vars(constants) if n.isupper() and any(part in n for part in names)]
    assert copied == []


def test_a_stale_list_is_refused_by_the_check(tmp_path):
    for name in ("README.md", "nbgrader_config.py"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    config = tmp_path / "nbgrader_config.py"
    config.write_text(config.read_text().replace("# c.SandboxKernelManager.processes = 64\n", ""))
    stale = [p.name for p, text in limits.generated(tmp_path).items() if p.read_text() != text]
    assert stale == ["nbgrader_config.py"]
