"""The tests' layout: folders that mirror the package, helpers apart (issue 34).

``python devtools/testlayout.py`` prints where each file still in the flat ``tests/`` folder goes;
``--apply`` moves them with ``git mv`` and rewrites the paths that name them (``tests/<file>``
in the README, the Makefile and every Python file); run it again after merging a branch that
added files to the flat folder. An assignment's own files (``cases_<a>.py``, ``margins_<a>.py``,
``labruns_<a>.py``, ``test_<a>*.py``) go to ``tests/grading/<a>/``; the other files are named
in ``FOLDERS``, or placed by ``PREFIXES``; a file neither places is reported and stays.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

FOLDERS = {
    "helpers": [
        "attacks.py",
        "casetable.py",
        "cellrun.py",
        "chromium.py",
        "classroomkit.py",
        "disguise.py",
        "footprintcases.py",
        "fragmentrun.py",
        "hostilefiles.py",
        "sandboxkit.py",
        "similarity_calibration.py",
        "similarity_classes.py",
        "similarity_pool.py",
        "snoop.py",
        "tiny_course.py",
        "toy_course.py",
        "visible_rates.py",
        "visiblecatch.py",
    ],
    "unit": [
        "test_channel.py",
        "test_checks.py",
        "test_control_characters.py",
        "test_footprint.py",
        "test_integrity.py",
        "test_judge.py",
        "test_limits.py",
        "test_lint.py",
        "test_own_words.py",
        "test_parts.py",
        "test_pointers.py",
        "test_rule_attacks.py",
        "test_rules.py",
        "test_safemarkdown.py",
        "test_similarity.py",
        "test_structure.py",
        "test_upstream.py",
        "test_wire_bounds.py",
        "test_wire_frames.py",
    ],
    "grading": [
        "test_accept_secrets.py",
        "test_assignments.py",
        "test_instances.py",
        "test_rulecheck.py",
        "test_rulecheck_tamper.py",
        "test_same_score.py",
        "test_visible_checks.py",
        "test_visible_raises.py",
        "test_visible_statistics.py",
    ],
    "pipeline": [
        "test_bench.py",
        "test_cluster.py",
        "test_course.py",
        "test_demo.py",
        "test_exchange.py",
        "test_export.py",
        "test_feedback.py",
        "test_fuzz_notebooks.py",
        "test_gpu_lanes.py",
        "test_grade_students.py",
        "test_inert.py",
        "test_lms_collect.py",
        "test_not_graded.py",
        "test_plain_files.py",
        "test_postgres.py",
        "test_release_zip.py",
        "test_report.py",
        "test_soak.py",
        "test_submission_limits.py",
        "test_submission_limits_graded.py",
        "test_worker_faults.py",
    ],
    "sandbox": [
        "test_attacks.py",
        "test_budgets.py",
        "test_gpu.py",
        "test_nonroot.py",
        "test_nonroot_kernel.py",
        "test_sandbox.py",
    ],
    "browser": ["test_formgrader_browser.py"],
}
# A file no list names, by the start of its name.
PREFIXES = {
    "test_pipeline_": "pipeline",
    "test_classroom_": "classroom",
    "test_sandbox_": "sandbox",
    "test_judge_": "unit",
    "test_footprint_": "sandbox",
    "test_visible_": "grading",
}


def assignments() -> list[str]:
    """The course's assignments: the folders of ``source/``."""
    return sorted(p.name for p in (ROOT / "source").iterdir() if p.is_dir())


def folder_of(name: str, course: list[str]) -> str | None:
    """The folder under ``tests/`` where the flat folder's file ``name`` belongs, or None."""
    for a in sorted(course, key=len, reverse=True):  # the longest name that fits
        for kind in ("cases", "margins", "labruns", "test"):
            if name == f"{kind}_{a}.py" or name.startswith(f"{kind}_{a}_"):
                return f"grading/{a}"
    for folder, names in FOLDERS.items():
        if name in names:
            return folder
    return next((f for prefix, f in PREFIXES.items() if name.startswith(prefix)), None)


def moves() -> tuple[dict[str, str], list[str]]:
    """({file of the flat folder: its folder}, [files nothing places])."""
    course, placed, unplaced = assignments(), {}, []
    for path in sorted(TESTS.glob("*.py")):
        if path.name == "conftest.py":
            continue
        folder = folder_of(path.name, course)
        if folder:
            placed[path.name] = folder
        else:
            unplaced.append(path.name)
    return placed, unplaced


# Mentions of an assignment's files by pattern: ``tests/grading/<a>/cases_<a>.py`` and the like.
GENERIC = re.compile(r"(?<![\w/])tests/(cases|margins|labruns|test)_<(\w+)>")


def rewrite_references(placed: dict[str, str]) -> list[str]:
    """Rewrite ``tests/<name>`` as ``tests/<folder>/<name>`` in the tracked text files that
    name a moved file; return the files changed."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "Makefile", "*.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    names = re.compile(
        r"(?<![\w/])tests/(" + "|".join(re.escape(n.removesuffix(".py")) for n in placed) + r")\b"
    )
    changed = []
    for name in tracked:
        if name.startswith("release/"):
            continue
        path = ROOT / name
        text = path.read_text()
        new = names.sub(lambda m: f"tests/{placed[m.group(1) + '.py']}/{m.group(1)}", text)
        new = GENERIC.sub(r"tests/grading/<\2>/\1_<\2>", new)
        if new != text:
            path.write_text(new)
            changed.append(name)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apply", action="store_true", help="git mv the files")
    args = parser.parse_args()
    placed, unplaced = moves()
    for name, folder in placed.items():
        print(f"tests/{name} -> tests/{folder}/{name}")
        if args.apply:
            (TESTS / folder).mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "mv", f"tests/{name}", f"tests/{folder}/{name}"], cwd=ROOT, check=True
            )
    if args.apply:
        for name in rewrite_references(placed):
            print(f"rewrote the paths in {name}")
    for name in unplaced:
        print(f"tests/{name}: no folder (name it in FOLDERS)", file=sys.stderr)
    return 1 if unplaced else 0


if __name__ == "__main__":
    sys.exit(main())
