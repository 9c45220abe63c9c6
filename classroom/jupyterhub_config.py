"""JupyterHub for the classroom: PAM logins, one local server per user, per-role nbgrader.

Read by ``jupyterhub -f``; the classroom comes from the file ``$CLASSROOM`` names
(``classroom.json``, written by :func:`classroom.provision.provision`).
"""

import os
import sys
from pathlib import Path

from tornado.web import HTTPError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the classroom package
from classroom.provision import NoCourseAccess, load  # noqa: E402

c = get_config()  # noqa: F821
room = load(os.environ["CLASSROOM"])
state = room.root / "hub"

c.JupyterHub.bind_url = room.url
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = room.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{room.api_port}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [str(room.proxy)]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

# Passwords of the machine's Unix accounts (the default a real hub uses); the course's accounts only.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {a.name for a in room.accounts}

# Each user's JupyterLab runs as their Unix account, from the course's environment.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(room.env / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# No news feed and no update check: the servers call nobody.
c.Spawner.args = [
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
]
# A loaded machine takes a while to import JupyterLab and nbgrader.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180


def pre_spawn_hook(spawner):
    """The user's role configuration and the course's environment; a hub user with no role
    in the course gets no server, and is told why."""
    try:
        spawner.environment.update(room.server_environment(spawner.user.name))
    except NoCourseAccess as e:
        refused = HTTPError(403, str(e))
        refused.jupyterhub_message = str(e)  # shown on the hub's error page
        raise refused from None


c.Spawner.pre_spawn_hook = pre_spawn_hook
