"""git ao doctor: whether man pages and completions are where man and the shells look,
and the linked worktrees no session holds or a session lost track of."""

import json
import shutil
from pathlib import Path

import pytest

from tests.support import ao

ROOT = Path(__file__).resolve().parent.parent


def _checks(repo, env):
    res = ao("ao", "doctor", "--json", cwd=repo, env=env)
    return {c["name"]: c for c in json.loads(res.stdout)["checks"]}


def test_doctor_finds_installed_pages_and_completions(repo, tmp_path):
    data = tmp_path / "xdg"
    for rel, src in [("bash-completion/completions/git-ao-preserve", "bash/git-ao-preserve"),
                     ("zsh/site-functions/_git-ao-preserve", "zsh/_git-ao-preserve"),
                     ("fish/vendor_completions.d/git-ao.fish", "fish/git-ao.fish")]:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "completions" / src, data / rel)
    (tmp_path / "man" / "man1").mkdir(parents=True)
    shutil.copy(ROOT / "man" / "git-ao-preserve.1", tmp_path / "man" / "man1")
    checks = _checks(repo, {"XDG_DATA_HOME": str(data), "MANPATH": str(tmp_path / "man")})
    for name in ("man pages", "bash completion", "zsh completion", "fish completion"):
        assert checks[name]["ok"] is True, checks[name]
    assert str(data) in checks["bash completion"]["detail"]


def test_missing_completions_are_notes_not_problems(repo, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"XDG_DATA_HOME": str(empty), "XDG_DATA_DIRS": str(empty),
           "MANPATH": str(empty)}
    checks = _checks(repo, env)
    assert checks["bash completion"]["ok"] is None
    assert "git ao completion bash" in checks["bash completion"]["detail"]
    assert checks["man pages"]["ok"] is None
    res = ao("ao", "doctor", cwd=repo, env=env)
    assert "   note  fish completion: " in res.stdout


def test_doctor_notes_linked_worktrees_no_session_holds(repo, worktrees, tmp_path):
    """A worktree of a known repository that was never registered is what a shutdown
    would leave unsaved: doctor names it (a note, not a failure)."""
    from tests.support import git
    worktrees(repo, "held")
    loose = tmp_path / "loose"
    git("worktree", "add", "-q", "-b", "loose", str(loose), cwd=repo)
    res = ao("ao", "doctor", "--json", cwd=repo)
    checks = json.loads(res.stdout)["checks"]
    notes = [c for c in checks if c["name"] == "unregistered"]
    assert len(notes) == 1 and notes[0]["ok"] is None
    assert str(loose) in notes[0]["detail"] and "held" not in notes[0]["detail"]
    ao("ao", "add", str(loose), "--id", "loose", cwd=repo)
    checks = json.loads(ao("ao", "doctor", "--json", cwd=repo).stdout)["checks"]
    assert not [c for c in checks if c["name"] == "unregistered"]


def test_doctor_names_a_registered_worktree_that_was_moved(repo, worktrees, tmp_path):
    from tests.support import git
    wt = worktrees(repo, "mv")
    moved = tmp_path / "elsewhere"
    git("worktree", "move", str(wt), str(moved), cwd=repo)
    res = ao("ao", "doctor", "--json", cwd=repo, rc=1)
    checks = json.loads(res.stdout)["checks"]
    (bad,) = [c for c in checks if c["name"] == "session"]
    assert f"git worktree move {moved} {wt}" in bad["detail"] and bad["ok"] is False
    assert not [c for c in checks if c["name"] == "unregistered"]


@pytest.mark.parametrize("there", ["nothing", "an empty data dir"])
def test_a_new_install_is_said_to_have_recorded_nothing_and_doctor_makes_nothing(
        tmp_path, there):
    """No data dir or no database yet is fine for a new install: doctor says so
    (not "integrity ok" of a database that is not there) and creates neither."""
    data = tmp_path / "fresh" / "data"
    if there == "an empty data dir":
        data.mkdir(parents=True, mode=0o700)
    env = {"AO_DATA_DIR": str(data)}
    lines = ao("ao", "doctor", cwd=tmp_path, env=env, rc=None).stdout.splitlines()
    db = data / "git-ao.db"
    nothing = "not there yet, nothing recorded, as on a new install"
    want_dir = (f"     ok  data dir: {data}: {nothing} (the first command that records a "
                "session makes it)") if there == "nothing" else f"     ok  data dir: {data}"
    assert want_dir in lines, lines
    assert f"     ok  database: {db}: {nothing}" in lines, lines
    assert not [ln for ln in lines if "integrity" in ln], lines
    checks = {c["name"]: c for c in json.loads(
        ao("ao", "doctor", "--json", cwd=tmp_path, env=env, rc=None).stdout)["checks"]
        if c["name"] in ("data dir", "database")}
    assert checks["database"] == {"name": "database", "ok": True, "detail": f"{db}: {nothing}"}
    assert checks["data dir"]["ok"] is True and want_dir.endswith(checks["data dir"]["detail"])
    if there == "nothing":
        assert not (tmp_path / "fresh").exists()
    else:
        assert list(data.iterdir()) == []
