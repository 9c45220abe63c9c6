"""Development tools of the course's maintainers, apart from the package of hidden tests.

``bench``         ``make bench``: seconds per submission, and where they go
"""
