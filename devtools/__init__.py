"""Development tools of the attention course: never part of grading, never near hidden tests.

What a course team runs to try, show and measure the grader, kept out of ``attncourse`` (the
instructor package whose ``grading/`` holds the hidden tests). Each keeps its ``make`` target
and its ``attncourse`` verb (``cli`` imports it when the verb runs).

    ``submissions``   submissions built from the release (solution, named mistakes)
    ``autograde``     plain ``nbgrader autograde`` of a set of submissions (tests, demo)
    ``demo``          ``make demo``: the whole workflow on bundled submissions
    ``bench``         ``make bench``: seconds per submission, and where they go
    ``limits``        ``make limits``: the README's and the config's lists of limits, from the traits
    ``cpusample``     a command's CPU by kind of process (where ``make test`` spends it)
"""
