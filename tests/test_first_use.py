"""What a new user meets from the README alone: pushes checked before anything is
removed, dry runs and records that tell the truth, messages that say where the
work is. Remotes here are bare repositories on disk; a second data dir and a
clone stand for another machine."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.support import PROBE, ao, commit_on, db_path, dirty, git, ref_of, states

REF = "refs/ao/preserved/"


@pytest.fixture
def bare(tmp_path, repo):
    """A bare repository `backup` of `repo`, holding main."""
    path = tmp_path / "backup.git"
    git("init", "-q", "--bare", path, cwd=tmp_path)
    git("remote", "add", "backup", path, cwd=repo)
    git("push", "-q", "backup", "main", cwd=repo)
    return path


@pytest.fixture
def machine_b(tmp_path, bare):
    """Another machine: a clone of `bare` and its own data dir. Returns (clone, env)."""
    clone = tmp_path / "machine-b" / "proj"
    clone.parent.mkdir()
    git("clone", "-q", bare, clone, cwd=tmp_path)
    git("remote", "rename", "origin", "backup", cwd=clone)
    return clone, {"AO_DATA_DIR": str(tmp_path / "aodata-b")}


def remote_refs(bare) -> dict:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", REF, cwd=bare)
    return {ln.split()[0][len(REF):]: ln.split()[1] for ln in out.splitlines()}


def listed(cwd, env=None) -> dict:
    doc = json.loads(ao("ao", "list", "--json", cwd=cwd, env=env).stdout)
    return {s["id"]: s for s in doc["sessions"]}


# ---------------------------------------------------------------- pushing


@pytest.mark.parametrize("how", ["option", "setting", "path"])
def test_a_remote_that_cannot_exist_refuses_before_anything_is_removed(how, repo, worktrees,
                                                                         bare, tmp_path):
    wt = worktrees(repo, "spike")
    other = worktrees(repo, "other")
    dirty(wt)
    dirty(other)
    bad = str(tmp_path / "no-such.git") if how == "path" else "nosuchremote"
    args = ["ao-preserve", "--all"]
    if how == "setting":
        ao("ao", "config", "set", "preserve.push", bad, cwd=repo)
    else:
        args += ["--push", bad]
    res = ao(*args, cwd=repo, rc=1)
    for sid in ("spike", "other"):
        line = next(ln for ln in res.stdout.splitlines() if f"\t{sid}\t" in ln)
        assert line.startswith("preserve\trefused\t"), res.stdout
        assert bad in line and "nothing is removed" in line, line
    assert wt.is_dir() and other.is_dir()
    assert ref_of(repo, "spike") is None
    assert states(repo) == {"spike": "live", "other": "live"}
    # A dry run says the same, exit 1.
    res = ao(*args, "-n", cwd=repo, rc=1)
    assert res.stdout.count("\trefused\t") == 2, res.stdout
    # A good remote works for the same sessions.
    ao("ao-preserve", "--all", "--push", "backup", cwd=repo)
    assert set(remote_refs(bare)) == {"spike", "other"}


def test_a_checkpoint_with_push_pushes_and_says_so(repo, worktrees, bare):
    wt = worktrees(repo, "cp")
    dirty(wt)
    res = ao("ao-preserve", "cp", "--keep-worktree", "--push", "backup", cwd=repo)
    commit = ref_of(repo, "cp")
    assert remote_refs(bare) == {"cp": commit}
    assert f"push\tok\tcp\tpushed {REF}cp ({commit[:12]}) to backup" in res.stdout, res.stdout
    assert wt.is_dir()
    (wt / "more.txt").write_text("more\n")
    res = ao("ao-preserve", "cp", "--keep-worktree", "--push", "backup", "-n", cwd=repo)
    assert f"push\tok\tcp\twould push {REF}cp to backup" in res.stdout, res.stdout


def test_a_session_restored_elsewhere_relaunches_with_its_agent_facts(repo, worktrees, bare,
                                                                     machine_b, tmp_path):
    clone, b = machine_b
    wt = worktrees(repo, "far", harness="claude-code", agent_session_id="7f3a-resume")
    dirty(wt)
    ao("ao-preserve", "far", "--push", "backup", cwd=repo)
    body = git("log", "-1", "--format=%B", REF + "far", cwd=repo)
    assert "Ao-Agent-Session: 7f3a-resume" in body, body
    out = tmp_path / "probe.json"
    argv = " ".join(shlex.quote(a) for a in (sys.executable, "-c", PROBE, "{agent_session_id}"))
    ao("ao", "config", "set", "relaunch.command", argv, cwd=clone, env=b)
    ao("ao-restore", "--from", "backup", cwd=clone, env={**b, "PROBE_OUT": str(out)})
    seen = json.loads(out.read_text())
    assert seen["argv"] == ["7f3a-resume"]
    assert seen["env"]["AO_AGENT_SESSION_ID"] == "7f3a-resume"
    assert listed(clone, b)["far"]["agent_session_id"] == "7f3a-resume"


def test_doctor_recover_keeps_the_agent_session_id(repo, worktrees):
    wt = worktrees(repo, "rec", agent_session_id="abc-123")
    dirty(wt)
    ao("ao-preserve", "rec", cwd=repo)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db_path()}{suffix}"):
            os.unlink(f"{db_path()}{suffix}")
    ao("ao", "doctor", "--recover", "-C", repo, cwd=repo)
    assert listed(repo)["rec"]["agent_session_id"] == "abc-123"
