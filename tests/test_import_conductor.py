"""git ao import --tool conductor: the workspaces Conductor keeps inside a repository
added before 0.25.0 (`<repo>/.conductor/<name>`), found from the repositories
git-ao knows, those of the workspaces under `~/conductor/workspaces`, and the cwds
Claude Code and Codex record; imported as the others are."""

import json
import os

from tests import tool_state as ts
from tests.support import ao, crash_env, dirty, git, sessions_by_id

CC_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _results(res):
    return {r["id"]: r for r in json.loads(res.stdout)["results"]}


def _all_sessions(cwd):
    got = json.loads(ao("ao", "list", "--all", "--json", cwd=cwd).stdout)["sessions"]
    return {s["id"]: s for s in got}


def test_a_known_repositorys_legacy_workspace_is_imported_once(repo, ao_env):
    """No `~/conductor/workspaces` at all: the repository is known to git-ao (one of
    its worktrees is a session), and its `.conductor/tokyo` is a Conductor
    workspace, found by `git ao import` with no --tool too."""
    other = repo.parent / f"{repo.name}-mine"
    git("worktree", "add", "-q", "-b", "mine", str(other), cwd=repo)
    ao("ao", "add", str(other), cwd=repo)
    ws = ts.conductor_legacy_workspace(repo, "tokyo")
    ts.claude_transcript(ws, CC_ID)
    dirty(ws)
    assert not (ts.home() / "conductor").exists()
    res = ao("ao", "import", "--tool", "conductor", "-n", "--json", cwd=repo)
    got = _results(res)["tokyo"]
    assert (got["status"], got["harness"], got["agent_session_id"], got["workspace_path"]) == (
        "ok", "claude", CC_ID, str(ws)), got
    assert set(sessions_by_id(repo)) == {other.name}
    res = ao("ao", "import", "--json", cwd=repo)
    assert _results(res)["tokyo"]["status"] == "ok"
    s = sessions_by_id(repo)["tokyo"]
    assert (s["tool"], s["tool_id"], s["harness"], s["agent_session_id"], s["kind"],
            s["branch"]) == ("conductor", os.path.realpath(ws), "claude", CC_ID, "worker",
                             "tokyo")
    # Twice: nothing changes.
    res = ao("ao", "import", "--tool", "conductor", "--json", cwd=repo)
    assert {r["status"] for r in _results(res).values()} == {"nothing"}
    ts.round_trip(repo, ws)


def test_legacy_workspaces_found_from_the_cwd_an_agent_recorded(repo, make_repo, ao_env):
    """git-ao knows neither repository: a Codex rollout run in a subdirectory of one's
    `.conductor/lima` and a Claude Code transcript run in the other's
    `.conductor/oslo` name them; every legacy workspace of each is imported, an
    agent's or not."""
    other = make_repo()
    lima, paris = (ts.conductor_legacy_workspace(repo, n) for n in ("lima", "paris"))
    oslo = ts.conductor_legacy_workspace(other, "oslo")
    (lima / "pkg").mkdir()
    ts.codex_rollout(lima / "pkg", CX_ID)
    ts.claude_transcript(oslo, CC_ID)
    res = ao("ao", "import", "--json", cwd=repo)
    assert {k: r["status"] for k, r in _results(res).items()} == {
        "lima": "ok", "paris": "ok", "oslo": "ok"}
    got = _all_sessions(repo)
    assert {k: (s["tool"], s["harness"], s["agent_session_id"], s["workspace_path"])
            for k, s in got.items()} == {
        "lima": ("conductor", "codex", CX_ID, str(lima)),
        "paris": ("conductor", "", None, str(paris)),
        "oslo": ("conductor", "claude", CC_ID, str(oslo))}


def test_same_name_in_both_layouts_and_two_repositories_gets_distinct_ids(
        repo, make_repo, ao_env):
    """`tokyo` under `~/conductor/workspaces`, in the same repository's `.conductor`
    (found from the first) and in another known repository's `.conductor`: three
    sessions, three ids, three tool ids."""
    other = make_repo()
    new = ts.conductor_workspace(repo, "tokyo")
    old = ts.conductor_legacy_workspace(repo, "tokyo-old")
    git("branch", "-m", "tokyo-old", "tokyo-legacy", cwd=old)
    os.rename(old, repo / ".conductor" / "tokyo")
    git("worktree", "repair", str(repo / ".conductor" / "tokyo"), cwd=repo)
    old = repo / ".conductor" / "tokyo"
    elsewhere = ts.conductor_legacy_workspace(other, "tokyo")
    wt = other.parent / f"{other.name}-known"
    git("worktree", "add", "-q", "-b", "known", str(wt), cwd=other)
    ao("ao", "add", str(wt), cwd=other)
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    got = {s["workspace_path"]: (k, s["tool_id"]) for k, s in _all_sessions(repo).items()
           if s["tool"] == "conductor"}
    assert set(got) == {str(new), str(old), str(elsewhere)}
    assert len({k for k, _ in got.values()}) == 3
    assert len({t for _, t in got.values()}) == 3
    assert got[str(new)] == ("tokyo", f"{repo.name}/tokyo")
    res = ao("ao", "import", "--tool", "conductor", "--json", cwd=repo)
    assert {r["status"] for r in _results(res).values()} == {"nothing"}


def test_only_the_repositorys_own_worktrees_exactly_in_dot_conductor(repo, make_repo, ao_env):
    """Not a worktree deeper in `.conductor`, nor a plain directory or settings file
    there, nor another repository's worktree put there; a `.conductor` an agent ran
    in inside a workspace (a checked-in settings directory) is no repository root
    and is refused nowhere."""
    stranger = make_repo()
    ws = ts.conductor_legacy_workspace(repo, "rome")
    (repo / ".conductor" / "settings.toml").write_text("[scripts]\n")
    (repo / ".conductor" / "notes").mkdir()
    git("worktree", "add", "-q", "-b", "deep", str(repo / ".conductor" / "x" / "deep"),
        cwd=repo)
    git("worktree", "add", "-q", "-b", "alien", str(repo / ".conductor" / "alien"),
        cwd=stranger)
    ts.claude_transcript(ws, CC_ID)
    new = ts.conductor_workspace(repo, "kyoto")
    (new / ".conductor" / "scripts").mkdir(parents=True)
    ts.claude_transcript(new / ".conductor" / "scripts", "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d")
    res = ao("ao", "import", "--tool", "conductor", "--json", cwd=repo)
    assert {k: r["status"] for k, r in _results(res).items()} == {"rome": "ok", "kyoto": "ok"}


def test_from_names_a_dot_conductor_directory(repo, ao_env, tmp_path):
    ws = ts.conductor_legacy_workspace(repo, "cairo")
    res = ao("ao", "import", "--tool", "conductor", "--from", repo / ".conductor", "--json",
             cwd=repo)
    assert {k: r["status"] for k, r in _results(res).items()} == {"cairo": "ok"}
    assert sessions_by_id(repo)["cairo"]["workspace_path"] == str(ws)
    plain = tmp_path / "plain" / ".conductor"
    plain.mkdir(parents=True)
    res = ao("ao", "import", "--tool", "conductor", "--from", plain, "--json", cwd=repo, rc=1)
    (got,) = json.loads(res.stdout)["results"]
    assert got["status"] == "refused" and str(plain) in got["message"], got


def test_a_dot_conductor_holding_no_workspace_is_no_conductor_state(repo, ao_env):
    """Conductor keeps its settings in `.conductor/` too (settings.toml): a known
    repository with only those is no Conductor state, so `git ao import` with
    nothing else to read says so, as it did."""
    wt = repo.parent / f"{repo.name}-mine"
    git("worktree", "add", "-q", "-b", "mine", str(wt), cwd=repo)
    ao("ao", "add", str(wt), cwd=repo)
    (repo / ".conductor" / "scripts").mkdir(parents=True)
    (repo / ".conductor" / "settings.toml").write_text("[scripts]\n")
    res = ao("ao", "import", cwd=repo, rc=None)
    assert res.returncode != 0 and "no tool's state" in res.stderr, res


def test_a_new_workspace_at_a_pending_sessions_path_is_imported_as_its_own(repo, ao_env):
    """A workspace Conductor makes again at the path of one git-ao preserved (its
    save pending) is a new worktree: imported as a session of its own, the save
    staying pending beside it; the worktree a killed preserve left there is not."""
    ws = ts.conductor_workspace(repo, "lima")
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    (ws / "saved.txt").write_text("the first agent's\n")
    ao("ao-preserve", "lima", cwd=repo)
    assert not ws.exists()
    git("worktree", "add", "-q", str(ws), "lima", cwd=repo)  # made again, same branch
    res = ao("ao", "import", "--tool", "conductor", "--json", cwd=repo)
    got = _all_sessions(repo)
    new = [k for k, s in got.items() if k != "lima" and s["workspace_path"] == str(ws)]
    assert len(new) == 1 and got[new[0]]["state"] == "live", (res.stdout, got)
    assert got["lima"]["state"] == "pending"
    assert not (ws / "saved.txt").exists()
    # A preserve killed before its removal leaves the session's own worktree there.
    kept = ts.conductor_workspace(repo, "oslo")
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    (kept / "saved.txt").write_text("the agent's\n")
    ao("ao-preserve", "oslo", cwd=repo, rc=None, env=crash_env("preserve:after-db"))
    assert kept.is_dir()
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    assert [k for k, s in _all_sessions(repo).items()
            if s["workspace_path"] == str(kept)] == ["oslo"]
