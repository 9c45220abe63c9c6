"""What the report knows about one assignment: per submission, per part; and what it derives.

Only a ``graded`` submission (:mod:`attncourse.status`) counts in a failure rate, a score
distribution or the student × part matrix, and in each only for the parts it attempted; the
untouched, unreadable, refused and missing ones are counted apart, by name.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from attncourse.integrity.findings import Finding
from attncourse.judge import rules
from attncourse.report.causes import Cause
from attncourse.status import Status, SubmissionStatus

RULE_NOT_VERIFIABLE = "a rule the judge could not verify"


@dataclass
class PartResult:
    """One student's result in one part."""

    score: float = 0.0  # points given so far (written answers awaiting a grader give none)
    max_score: float = 0.0  # points the part is worth
    tests: int = 0  # autograded test cells
    failed: int = 0  # of them, failed
    waiting: int = 0  # written answers still waiting for a grader
    waiting_points: float = 0.0  # the points those answers are worth
    written: int = 0  # written answers (graded by hand)
    review: int = 0  # autograded cells flagged for a grader's review (an integrity finding)
    attempted: bool = False  # an answer cell of the part differs from the release's stub

    @property
    def graded_points(self) -> float:
        """The points of the part already given or refused (not waiting for a grader)."""
        return self.max_score - self.waiting_points

    @property
    def fraction(self) -> float | None:
        """Share of the graded points given; None when nothing of the part is graded yet."""
        return self.score / self.graded_points if self.graded_points > 0 else None


@dataclass
class Submission:
    """One student's submission of one assignment."""

    student: str
    status: SubmissionStatus
    score: float = 0.0
    parts: dict[str, PartResult] = field(default_factory=dict)  # part label -> result

    @property
    def graded(self) -> bool:
        return self.status.graded

    def attempted(self, part: str) -> bool:
        return self.graded and part in self.parts and self.parts[part].attempted


@dataclass(frozen=True)
class Mistake:
    """One failed test of a graded submission's attempted part, by its cause."""

    student: str
    part: str
    test: str  # the test cell's grade id
    cause: Cause


@dataclass
class MistakeGroup:
    """The students whose tests failed for one cause, and in which parts."""

    cause: Cause
    students: set[str] = field(default_factory=set)
    parts: list[str] = field(default_factory=list)  # in course order
    details: set[str] = field(default_factory=set)


@dataclass
class AssignmentReport:
    """What the report shows about one assignment."""

    name: str
    max_score: float
    parts: list[str] = field(default_factory=list)  # part labels, in the notebook's order
    kinds: dict[str, set[str]] = field(default_factory=dict)  # part -> {"test", "written", ...}
    submissions: dict[str, Submission] = field(default_factory=dict)  # student -> submission
    mistakes: list[Mistake] = field(default_factory=list)
    findings: list[tuple[str, Finding]] = field(default_factory=list)  # (student, finding)
    flagged: dict[str, str] = field(default_factory=dict)  # student -> why (findings, a grader)
    # student -> {classmate: [parts]}: answers that are another student's own numbers
    instance_matches: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # student -> grading seconds
    run_status: dict[str, str] = field(default_factory=dict)  # student -> the grading run's word
    timing_source: str = ""

    def graded(self) -> list[Submission]:
        """The graded submissions, by student id."""
        return [s for _, s in sorted(self.submissions.items()) if s.graded]

    def apart(self) -> dict[Status, list[Submission]]:
        """The submissions not graded, by status (untouched, unreadable, refused, missing)."""
        out: dict[Status, list[Submission]] = defaultdict(list)
        for _, sub in sorted(self.submissions.items()):
            if not sub.graded:
                out[sub.status.status].append(sub)
        return {status: out[status] for status in Status if status in out}

    def tested_parts(self) -> list[str]:
        return [p for p in self.parts if "test" in self.kinds.get(p, ())]

    def failure_rate(self, part: str) -> tuple[list[str], list[str]]:
        """(students who failed a test of ``part``, students who attempted it): graded only."""
        attempted = [s for s in self.graded() if s.attempted(part)]
        failed = [s.student for s in attempted if s.parts[part].failed]
        return failed, [s.student for s in attempted]

    def not_attempted(self, part: str) -> list[str]:
        """Graded students who left ``part`` as released."""
        return [s.student for s in self.graded() if not s.attempted(part)]

    def written_parts(self) -> list[str]:
        return [p for p in self.parts if "written" in self.kinds.get(p, ())]

    def waiting(self, part: str, graded: bool = True) -> list[str]:
        """Students whose written answer of ``part`` waits for a grader: of the graded
        submissions, or (``graded=False``) of those counted apart."""
        subs = [s for _, s in sorted(self.submissions.items()) if s.graded == graded]
        return [s.student for s in subs if part in s.parts for _ in range(s.parts[part].waiting)]

    def submitted_answers(self, part: str) -> list[str]:
        """Graded students with a written answer in ``part`` (one entry per answer)."""
        return [
            s.student
            for s in self.graded()
            if part in s.parts
            for _ in range(s.parts[part].written)
        ]

    def under_review(self) -> dict[str, list[str]]:
        """part -> graded students whose autograded cells of it are flagged for review."""
        out: dict[str, list[str]] = {}
        for sub in self.graded():
            for part in self.parts:
                if part in sub.parts and sub.parts[part].review:
                    out.setdefault(part, []).append(sub.student)
        return out

    def mistake_groups(self) -> list[MistakeGroup]:
        """Mistakes grouped by cause, named causes first, most students first."""
        groups: dict[Cause, MistakeGroup] = {}
        for m in self.mistakes:
            key = Cause(m.cause.text, m.cause.named)
            group = groups.setdefault(key, MistakeGroup(key))
            group.students.add(m.student)
            if m.part not in group.parts:
                group.parts.append(m.part)
            if m.cause.detail:
                group.details.add(m.cause.detail)
        order = {p: i for i, p in enumerate(self.parts)}
        for group in groups.values():
            group.parts.sort(key=lambda p: order.get(p, len(order)))
        return sorted(
            groups.values(), key=lambda g: (not g.cause.named, -len(g.students), g.cause.text)
        )

    def findings_once(self) -> list[tuple[str, Finding]]:
        """Each integrity finding once per student, part and kind: the first one's place,
        every distinct detail."""
        seen: dict[tuple[str, str | None, str], tuple[str, Finding]] = {}
        for student, finding in self.findings:
            key = (student, finding.part, finding.kind)
            if key not in seen:
                seen[key] = (student, finding)
            elif finding.detail not in seen[key][1].detail.split("; "):
                first = seen[key][1]
                seen[key] = (student, replace(first, detail=f"{first.detail}; {finding.detail}"))
        return list(seen.values())

    def integrity_by_part(self) -> dict[str, Counter]:
        """part -> {what: students}: an integrity finding of the scan (by kind), and the
        tests the judge failed because it could not verify a rule (code that patches
        libraries or that it cannot read), each student once per part."""
        seen = {(s, f.part, f.kind) for s, f in self.findings}
        seen |= {
            (m.student, m.part, RULE_NOT_VERIFIABLE)
            for m in self.mistakes
            if m.cause.text in (rules.FROM_OUTSIDE, rules.UNVERIFIABLE)
        }
        out: dict[str, Counter] = {}
        for _, part, what in seen:
            out.setdefault(part, Counter())[what] += 1
        return out
