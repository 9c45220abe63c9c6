"""``attncourse report``: one HTML page a course team reads in a minute (``reports/index.html``).

``causes``      what a failed test says went wrong: the judge's named cause, or a raw error
``model``       one assignment's submissions, per part, and what the page derives from them
``collect``     the gradebook and the autograded notebooks read into the model, in course order
``figures``     the matplotlib figures (heat map, failure rates, distributions, trends)
``markup``      escaped tables, embedded figures, the page's style and policy (no script)
``matrix``      the student × part heat map and its table, sortable without a script
``assignment``  one assignment's section
``page``        the overview, the page, and :func:`~attncourse.report.page.build_report`
"""
