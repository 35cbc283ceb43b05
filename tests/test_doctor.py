"""git ao doctor: whether man pages and completions are where man and the shells look,
and the linked worktrees no session holds or a session lost track of."""

import json
import shutil
from pathlib import Path

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
