"""git's repository variables in the caller's shell never choose the session, and a
relative AO_DATA_DIR means the directory it named when the command started."""

import json

from tests.conftest import ao


def test_git_work_tree_never_redirects_a_plain_preserve(repo, worktrees):
    here = worktrees(repo, "here")
    other = worktrees(repo, "other")
    (here / "mine.txt").write_text("mine\n")
    (other / "theirs.txt").write_text("theirs\n")
    res = ao("ao-preserve", cwd=here, env={"GIT_WORK_TREE": str(other)})
    assert "warning: GIT_WORK_TREE set in the environment; ignored" in res.stderr
    assert res.stdout.split("\t")[:3] == ["preserve", "ok", "here"]
    assert other.exists() and (other / "theirs.txt").exists()
    assert not here.exists()
    sessions = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]
    assert {s["id"]: s["state"] for s in sessions} == {"here": "pending", "other": "live"}


def test_read_only_commands_create_no_state(repo, worktrees, ao_env):
    data = ao_env / "aodata"
    assert not data.exists()
    for args in (["ao", "list"], ["ao", "list", "--json"], ["ao", "doctor"],
                 ["ao", "config", "list"], ["ao", "log"]):
        ao(*args, cwd=repo, rc=None)
        assert not data.exists(), args
    ao("ao", "show", "nosuch", cwd=repo, rc=1)
    assert not data.exists()
    worktrees(repo, "s1")
    db = data / "git-ao.db"
    # SQLite's own -wal and -shm files of a read-only connection are not git-ao state.
    def names():
        return sorted(p.name for p in data.iterdir() if not p.name.endswith(("-wal", "-shm")))

    before = names()
    stamp = db.stat().st_mtime_ns
    assert [r["id"] for r in json.loads(
        ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]] == ["s1"]
    ao("ao", "show", "s1", cwd=repo)
    assert names() == before
    assert db.stat().st_mtime_ns == stamp


def test_a_relative_ao_data_dir_is_resolved_once_where_the_command_starts(repo, worktrees,
                                                                          tmp_path):
    wt = worktrees(repo, "rel", register=False)
    env = {"AO_DATA_DIR": "rel-data"}
    ao("ao", "add", "-C", wt, cwd=tmp_path, env=env)
    assert (tmp_path / "rel-data" / "git-ao.db").exists()
    assert not (wt / "rel-data").exists()
    res = ao("ao", "list", "--all", "--json", cwd=tmp_path, env=env)
    assert [s["id"] for s in json.loads(res.stdout)["sessions"]] == ["rel"]


def _homeless(tmp_path, home, *args, cwd):
    """Run `git <args>` with no HOME (as a shutdown unit may), the password database
    saying the user's home is `home` (a copy of /etc/passwd bound over it in a
    mount namespace of its own), and no other variable naming a home."""
    import os
    import subprocess
    lines = []
    with open("/etc/passwd") as fh:
        entries = fh.read().splitlines()
    for ln in entries:
        f = ln.split(":")
        if len(f) >= 7 and f[2] == str(os.getuid()):
            f[5] = str(home)
            ln = ":".join(f)
        lines.append(ln)
    fake = tmp_path / "passwd"
    fake.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "GIT_CONFIG_GLOBAL") and not k.startswith("XDG_")}
    return subprocess.run(["unshare", "-m", "sh", "-c",
                           'mount --bind "$0" /etc/passwd && exec "$@"', fake, "git", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_no_home_reads_the_global_excludes_as_git_with_home_would(repo, worktrees, tmp_path):
    import os
    import shutil

    import pytest

    from tests.support import REF, git
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root to bind a password database over /etc/passwd")
    home = tmp_path / "pwhome"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/.global-ignore\n")
    (home / ".global-ignore").write_text(".env\n")
    (home / ".config" / "git" / "ignore").write_text("*.log\n")
    wt = worktrees(repo, "nohome")
    (wt / ".env").write_text("SECRET=1\n")
    (wt / "build.log").write_text("log\n")
    (wt / "notes.txt").write_text("mine\n")
    probe = _homeless(tmp_path, home, "ao-preserve", "-n", "nohome", cwd=repo)
    if "mount" in probe.stderr and probe.returncode:
        pytest.skip(f"cannot bind over /etc/passwd here: {probe.stderr.strip()}")
    res = _homeless(tmp_path, home, "ao-preserve", "nohome", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr, res.stderr
    saved = git("ls-tree", "-r", "--name-only", f"{REF}nohome^3", cwd=repo).split()
    assert saved == ["notes.txt"], saved  # what the user's git ignores stays out
    ao("ao-restore", cwd=repo)
    assert (wt / ".env").read_text() == "SECRET=1\n" and (wt / "build.log").exists()
    # No home directory known: said, on one line.
    res = _homeless(tmp_path, tmp_path / "no-such-home", "ao", "list", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("warning: HOME is not set and uid 0 has no home "
                                 f"directory ({tmp_path / 'no-such-home'}): git reads no "
                                 "global config"), res.stderr
    assert len(res.stderr.splitlines()) == 1


def test_a_git_process_gets_the_environment_as_it_is_when_it_starts(monkeypatch, tmp_path):
    """The environment made for git is reused only while os.environ is unchanged."""
    from git_ao import git
    first = git.line(["var", "GIT_AUTHOR_IDENT"], str(tmp_path))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Later Name")
    assert git.line(["var", "GIT_AUTHOR_IDENT"], str(tmp_path)).startswith("Later Name <")
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    assert git.line(["var", "GIT_AUTHOR_IDENT"], str(tmp_path)).split(">")[0] == \
        first.split(">")[0]
    from git_ao import quickgit
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    assert "GIT_DIR" not in quickgit.environment()
    assert quickgit.environment(inherit_repo_env=True)["GIT_DIR"] == str(tmp_path / "elsewhere")
