"""A repository moved (`mv app app2`) with pending sessions' worktrees inside it:
every route that re-points the repository's records (`git ao doctor --recover -C`,
`git ao add NEWPATH --id ID`) points a pending session whose worktree was inside
the old top directory at the same place under the new one, leaves one outside
where it was, and deletes nothing at the old path; restore, doctor and prune
give one piece of advice for a pending session whose repository is missing."""

import os
from pathlib import Path

import pytest

from git_ao.fs.gone import missing_repo_advice
from tests.support import ao, git, init_repo, sessions_by_id


def _app(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """app with a pending session inside it ('in', at .claude/worktrees/in), one
    pending outside it ('out', beside it) and a live one inside ('live'), then
    moved to app2 (its linked worktrees repaired). Returns (app2, in's recorded
    path, out's path, live's new path)."""
    app = tmp_path / "app"
    app.mkdir()
    git("init", "-q", "-b", "main", cwd=app)
    init_repo(app)
    (app / ".git" / "info" / "exclude").write_text(".claude/\n")
    inside = app / ".claude" / "worktrees" / "in"
    outside = tmp_path / "out"
    live = app / ".claude" / "worktrees" / "live"
    for name, path in (("in", inside), ("out", outside), ("live", live)):
        git("worktree", "add", "-q", "-b", name, path, cwd=app)
        ao("ao", "add", path, "--id", name, cwd=app)
        (path / "work.txt").write_text(f"{name}'s work\n")
    ao("ao-preserve", "in", cwd=app)
    ao("ao-preserve", "out", cwd=app)
    app2 = tmp_path / "app2"
    app.rename(app2)
    git("worktree", "repair", app2 / ".claude" / "worktrees" / "live", cwd=app2)
    return app2, inside, outside, app2 / ".claude" / "worktrees" / "live"


@pytest.mark.parametrize("route", ["recover", "add"])
def test_a_moved_repositorys_pending_sessions_inside_it_move_with_it(tmp_path, route):
    app2, inside, outside, live = _app(tmp_path)
    if route == "recover":
        ao("ao", "doctor", "--recover", "-C", app2, cwd=app2, rc=1)  # live: its own add
    else:
        ao("ao", "add", live, "--id", "live", cwd=app2)
    got = sessions_by_id(app2)
    new_in = app2 / ".claude" / "worktrees" / "in"
    assert (got["in"]["state"], got["in"]["workspace_path"], got["in"]["repo"]) == (
        "pending", str(new_in), str(app2 / ".git")), got["in"]
    # Outside the repository: its path stays (the record follows the repository).
    assert (got["out"]["state"], got["out"]["workspace_path"], got["out"]["repo"]) == (
        "pending", str(outside), str(app2 / ".git")), got["out"]
    res = ao("ao-restore", "in", cwd=app2)
    assert str(new_in) in res.stdout and str(inside) not in res.stdout, res.stdout
    assert (new_in / "work.txt").read_text() == "in's work\n"
    assert not (tmp_path / "app").exists()  # nothing re-created at the old path
    ao("ao-restore", "out", cwd=app2)
    assert (outside / "work.txt").read_text() == "out's work\n"


def test_a_pending_path_outside_the_repository_is_left_where_it_was(tmp_path):
    # A path that only starts like the old top (app-other beside app) is not inside it.
    app = tmp_path / "app"
    app.mkdir()
    git("init", "-q", "-b", "main", cwd=app)
    init_repo(app)
    near = tmp_path / "app-other"
    git("worktree", "add", "-q", "-b", "near", near, cwd=app)
    ao("ao", "add", near, "--id", "near", cwd=app)
    (near / "work.txt").write_text("work\n")
    ao("ao-preserve", "near", cwd=app)
    app.rename(tmp_path / "app2")
    ao("ao", "doctor", "--recover", "-C", tmp_path / "app2", cwd=tmp_path / "app2")
    assert sessions_by_id(tmp_path / "app2")["near"]["workspace_path"] == str(near)


def test_restore_doctor_and_prune_give_one_advice_for_a_moved_repository(tmp_path):
    app2, _inside, _outside, _live = _app(tmp_path)
    advice = missing_repo_advice("in")
    said = {}
    for args, rc in ((("ao-restore", "in"), 1), (("ao", "doctor"), 1), (("ao-prune", "-n"), 0)):
        res = ao(*args, cwd=app2, rc=rc)
        said[args[0]] = res.stdout + res.stderr
    for cmd, text in said.items():
        assert advice in text, (cmd, text)
        assert "git ao forget --force in, then" not in text, (cmd, text)
    assert "(or mount its disk)" in advice and "--recover -C NEWPATH" in advice
    assert os.path.isdir(app2)


def _bare(tmp_path: Path, common: Path, worktrees: dict[str, Path]) -> None:
    """A bare clone at `common` with a linked worktree per id in `worktrees`, each
    registered under that id with work in it; 'live' stays live, the others are
    preserved (pending)."""
    src = tmp_path / "src"
    src.mkdir()
    git("init", "-q", "-b", "main", cwd=src)
    init_repo(src)
    common.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", src, common, cwd=tmp_path)
    for sid, path in worktrees.items():
        git("worktree", "add", "-q", "-b", sid, path, cwd=common)
        ao("ao", "add", path, "--id", sid, cwd=path)
        (path / "work.txt").write_text(f"{sid}'s work\n")
        if sid != "live":
            ao("ao-preserve", sid, cwd=common)


def _repoint(route: str, common: Path, live: Path) -> None:
    """Re-point the records of the repository moved to `common` by `route`."""
    git("worktree", "repair", live, cwd=common)
    if route == "recover":
        ao("ao", "doctor", "--recover", "-C", common, cwd=common, rc=1)  # live: its own add
    else:
        ao("ao", "add", live, "--id", "live", cwd=live)


@pytest.mark.parametrize("route", ["recover", "add"])
def test_a_hidden_bare_repository_moved_alone_leaves_its_worktrees_paths(tmp_path, route):
    # A bare ~/.dotfiles with its worktrees under ~/work, moved to ~/.config/dotfiles:
    # the home directory holding it did not move, so neither did ~/work/feat.
    home = tmp_path / "home"
    old = home / ".dotfiles"
    feat, live = home / "work" / "feat", home / "work" / "live"
    _bare(tmp_path, old, {"feat": feat, "live": live})
    new = home / ".config" / "dotfiles"
    new.parent.mkdir()
    old.rename(new)
    _repoint(route, new, live)
    got = sessions_by_id(new)["feat"]
    assert (got["state"], got["workspace_path"], got["repo"]) == (
        "pending", str(feat), str(new)), got
    ao("ao-restore", "feat", cwd=new)
    assert (feat / "work.txt").read_text() == "feat's work\n"
    assert not (new / "work").exists()  # nothing written inside the bare repository


@pytest.mark.parametrize("route", ["recover", "add"])
@pytest.mark.parametrize("moved", ["project", "repository"])
def test_a_bare_repository_with_worktrees_beside_it(tmp_path, route, moved):
    # proj/app.git with proj/feat beside it: `mv proj proj2` moves proj/feat too;
    # `mv proj/app.git proj/app2.git` moves no worktree (proj is still there).
    proj = tmp_path / "proj"
    feat, live = proj / "feat", proj / "live"
    _bare(tmp_path, proj / "app.git", {"feat": feat, "live": live})
    if moved == "project":
        proj.rename(tmp_path / "proj2")
        proj = tmp_path / "proj2"
        new, feat_now, live = proj / "app.git", proj / "feat", proj / "live"
    else:
        new, feat_now = proj / "app2.git", feat
        (proj / "app.git").rename(new)
    _repoint(route, new, live)
    got = sessions_by_id(new)["feat"]
    assert (got["state"], got["workspace_path"], got["repo"]) == (
        "pending", str(feat_now), str(new)), got
    ao("ao-restore", "feat", cwd=new)
    assert (feat_now / "work.txt").read_text() == "feat's work\n"
    assert not (tmp_path / "proj").exists() or moved == "repository"
