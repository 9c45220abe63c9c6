"""make classroom checks, before anything starts, that the accounts can reach the environment.

A clone inside a folder of mode 700 (a home, one ``mktemp -d`` made) leaves the accounts'
servers without nbgrader: the check names that folder and what to do, and exits non-zero
before an account, a folder or the hub is made. No root needed: nothing is created.
"""

import shutil
import tempfile
from pathlib import Path

import pytest

import classroom.__main__ as classroom_main
import classroom.provision
from classroom.accounts import Account
from classroom.provision import Classroom, provision
from classroom.reach import VERSION, Unreachable, check_reach, closed_folder


@pytest.fixture
def tmp_path():
    """A fresh folder every account can enter (pytest's own are in a folder of mode 700)."""
    folder = Path(tempfile.mkdtemp(prefix="attncourse-reach-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def clone(tmp_path):
    """A clone with its venv (nbgrader's package in it) inside ``tmp_path/private`` (mode 700)."""
    private = tmp_path / "private"
    checkout = private / "attention-course"
    nbgrader = checkout / ".venv" / "lib" / f"python{VERSION}" / "site-packages" / "nbgrader"
    nbgrader.mkdir(parents=True)
    (nbgrader / "__init__.py").write_text("")
    for folder in [tmp_path, *nbgrader.relative_to(tmp_path).parents, nbgrader]:
        (tmp_path / folder).chmod(0o755)
    private.chmod(0o700)
    return private, checkout


def room(tmp_path, checkout):
    accounts = (Account("ac-teach", "instructor", "x"),)
    return Classroom(tmp_path / "room", accounts, checkout=checkout, venv=checkout / ".venv")


def test_a_clone_in_a_private_folder_is_stopped_naming_the_folder(tmp_path, clone, monkeypatch):
    private, checkout = clone
    assert closed_folder(checkout / ".venv") == private
    monkeypatch.setattr(classroom.provision, "ensure", pytest.fail)  # no account is made
    with pytest.raises(Unreachable) as unreachable:
        provision(room(tmp_path, checkout))
    message = str(unreachable.value)
    assert f"{private} (mode 700) lets no other account in" in message
    assert "without nbgrader" in message and f"chmod o+rx {private}" in message
    assert not (tmp_path / "room").exists(), "nothing was made"
    # Control: the same clone in a folder every account can enter passes.
    private.chmod(0o755)
    assert closed_folder(checkout / ".venv") is None
    check_reach(checkout / ".venv", checkout)


def test_a_package_folder_others_cannot_read_is_named(tmp_path, clone):
    private, checkout = clone
    private.chmod(0o755)
    nbgrader = checkout / ".venv" / "lib" / f"python{VERSION}" / "site-packages" / "nbgrader"
    nbgrader.chmod(0o711)  # enterable, not readable (a pip install under umask 077 reads 700)
    with pytest.raises(Unreachable, match=f"{nbgrader} \\(mode 711\\)"):
        check_reach(checkout / ".venv", checkout)


def test_make_classroom_exits_non_zero_with_the_message_before_the_hub(
    tmp_path, clone, monkeypatch, capsys
):
    _, checkout = clone
    monkeypatch.setattr(classroom_main.os, "geteuid", lambda: 0)
    monkeypatch.setattr(classroom.provision, "ensure", pytest.fail)
    monkeypatch.setattr(classroom_main, "running", pytest.fail)  # the hub never starts
    monkeypatch.setattr(
        classroom_main,
        "Classroom",
        lambda root, accounts, port: Classroom(
            root, accounts, port=port, checkout=checkout, venv=checkout / ".venv"
        ),
    )
    assert classroom_main.main(["--root", str(tmp_path / "room"), "--port", "8000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("make classroom: the course's accounts cannot reach its environment")
    assert not (tmp_path / "room").exists()


def test_this_checkout_is_reachable_where_the_classroom_tests_run():
    """The classroom tests provision from this checkout: where it sits in a closed folder,
    they fail at once with the same message (make_classroom calls provision first)."""
    from attncourse.course import ROOT

    try:
        check_reach(classroom.provision.Classroom.venv, ROOT)
    except Unreachable as unreachable:
        pytest.fail(str(unreachable))
