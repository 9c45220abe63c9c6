"""One student at a time, any course: ``attncourse grade ASSIGNMENT --student ID`` grades only
those students and keeps everyone else; every ``make`` target takes ``COURSE=``.

The regrade itself (scores of the others unchanged in the gradebook) is checked on the toy
class in ``test_pipeline_run``; here the command line, the run summary and the Makefile.
"""

import json
import re

from attncourse import cli, pipeline
from attncourse.course import ROOT
from attncourse.pipeline import merged_rows


def test_student_option_is_repeatable_and_reaches_the_pipeline(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(pipeline, "grade", lambda *a, **kw: calls.append((a, kw)) or (0, {}))
    args = cli.build_parser().parse_args(
        ["grade", "attention_variants", "--student", "ada", "--student", "bo", "--course", "."]
    )
    assert args.func(args) == 0
    assert calls[0][0] == ("attention_variants",) and calls[0][1]["students"] == ["ada", "bo"]
    args = cli.build_parser().parse_args(["grade", "attention_variants"])
    args.func(args)
    assert calls[1][1]["students"] is None, "without --student, every student is graded"


def test_a_regrade_keeps_everyone_elses_rows_of_the_last_summary(tmp_path):
    summary = tmp_path / "summary.json"
    earlier = [
        {"student": "ada", "score": 3, "status": "ok"},
        {"student": "bo", "score": 1, "status": "faults"},
        {"student": "cy", "score": 0, "status": "unreadable"},
    ]
    summary.write_text(json.dumps({"students": earlier}))
    regraded = [{"student": "bo", "score": 4, "status": "ok"}]
    rows = merged_rows(summary, regraded)
    assert [(r["student"], r["score"]) for r in rows] == [("ada", 3), ("bo", 4), ("cy", 0)]
    assert merged_rows(tmp_path / "none.json", regraded) == regraded


def test_every_make_target_that_runs_a_command_takes_the_course():
    recipes = re.findall(
        r"^\t.*\$\(BIN\)/attncourse (\S+)(.*)$", (ROOT / "Makefile").read_text(), re.M
    )
    assert len(recipes) >= 13
    assert [command for command, rest in recipes if "$(AT)" not in rest] == []
