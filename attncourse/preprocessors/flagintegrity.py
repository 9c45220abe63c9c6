"""Autograde stage, after ``SaveAutoGrades``: flag every part with integrity findings for review.

What a part is, and why scores never depend on the scan, is in :mod:`attncourse.integrity`.
"""

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from attncourse.integrity.coursenotebook import course_notebook
from attncourse.integrity.findings import findings_of, flagged_comment


class FlagIntegrity(NbGraderPreprocessor):
    """Autograde stage, after ``SaveAutoGrades``: flag every part with findings for review.

    The tests' scores stand (the judge computed them outside the kernel); each
    autograded cell of the part needs manual grading, and the part's answer cell
    gets a comment listing the findings, shown in formgrader and the feedback; the
    submitted notebook gets nbgrader's own flag (formgrader's "Flagged?" column).
    Re-running autograde re-applies this from the fresh scan; manual scores and
    manual comments are never touched.
    """

    def preprocess(
        self, nb: NotebookNode, resources: ResourcesDict
    ) -> tuple[NotebookNode, ResourcesDict]:
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
            gb.find_submission_notebook(*ids).flagged = True
            gb.db.commit()
        return nb, resources
