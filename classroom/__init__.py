"""The course on a real JupyterHub: ``make classroom`` and the tests of a term on it.

- :mod:`classroom.accounts`: the Unix accounts (instructor, students), created as root.
- :mod:`classroom.environment`: the course's environment, runnable by every account.
- :mod:`classroom.reach`: before anything starts, that every account can reach it.
- :mod:`classroom.provision`: the exchange, the instructor's private course directory and
  each role's Jupyter configuration, under one root.
- ``classroom/attncourse_submit.py``: the students' ``nbgrader submit`` (private folders).
- ``classroom/jupyterhub_config.py``: the hub (PAM, local spawner, per-role nbgrader).
- :mod:`classroom.hub`: start the hub, wait for it, stop it.
- ``python -m classroom``: all of it with demo accounts, until Ctrl-C.
"""
