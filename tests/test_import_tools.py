"""git ao import --tool: Claude Code, Codex and Conductor state, read-only, registered."""

import json
import os
from pathlib import Path

from tests import tool_state as ts
from tests.support import ao, dirty, git, init_repo, sessions_by_id
from tests.worktree_state import assert_restored, state

CC_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _results(res):
    return {r["id"]: r for r in json.loads(res.stdout)["results"]}


def test_claude_code_worktree_imported_with_its_transcript_and_round_trips(repo, ao_env):
    wt = ts.claude_worktree(repo, "feature-auth")
    ts.claude_transcript(wt, CC_ID)
    old = ts.claude_transcript(wt / "src", "0d2c5a1e-9b8f-4c3d-a2e1-f0e9d8c7b6a5")
    os.utime(old, ns=(1, 1))  # an older session, started deeper
    dirty(wt)
    before_tool = ts.digests(ts.home() / ".claude")
    res = ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo)
    got = _results(res)
    assert got["feature-auth"]["status"] == "ok"
    s = sessions_by_id(repo)["feature-auth"]
    assert (s["harness"], s["agent_session_id"], s["tool"], s["kind"], s["branch"],
            s["workspace_path"]) == ("claude", CC_ID, "claude-code", "worker",
                                      "worktree-feature-auth", str(wt))
    # Twice: nothing changes.
    res = ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo)
    assert {r["status"] for r in _results(res).values()} == {"nothing"}
    assert ts.digests(ts.home() / ".claude") == before_tool
    ts.round_trip(repo, wt)


def test_same_worktree_name_in_two_repositories_gets_distinct_ids(repo, make_repo, ao_env):
    other = make_repo()
    a, b = ts.claude_worktree(repo, "feature"), ts.claude_worktree(other, "feature")
    ts.claude_transcript(a, CC_ID)
    ts.claude_transcript(b, "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d")
    ao("ao", "import", "--tool", "claude-code", cwd=repo)
    got = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)["sessions"]
    assert sorted((s["id"], s["workspace_path"]) for s in got) == sorted(
        [("feature", str(a)), (f"{other.name}-feature", str(b))]) or sorted(
        (s["id"], s["workspace_path"]) for s in got) == sorted(
        [(f"{repo.name}-feature", str(a)), ("feature", str(b))])


def test_claude_code_worktree_removed_is_not_imported(repo, ao_env):
    wt = ts.claude_worktree(repo, "gone")
    ts.claude_transcript(wt, CC_ID)
    git("worktree", "remove", str(wt), cwd=repo)
    res = ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo)
    r = _results(res)["gone"]
    assert r["status"] == "nothing" and "not live" in r["message"]
    assert sessions_by_id(repo) == {}


def test_a_claude_code_directory_that_is_no_worktree_is_not_called_gone(repo, ao_env):
    # The worktree's directory is there, as a plain directory (a clone, a copy):
    # not imported, and said as what it is.
    wt = ts.claude_worktree(repo, "plain")
    ts.claude_transcript(wt, CC_ID)
    git("worktree", "remove", str(wt), cwd=repo)
    wt.mkdir(parents=True)
    (wt / "notes.txt").write_text("still here\n")
    got = _results(ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo))["plain"]
    assert got["status"] == "nothing" and "no linked worktree" in got["message"], got
    assert "gone" not in got["message"]
    assert sessions_by_id(repo) == {}


def test_corrupt_transcript_refused_naming_it_and_other_tools_import(repo, ao_env):
    cc = ts.claude_worktree(repo, "cc")
    bad = ts.claude_transcript(cc, CC_ID, first="{not json")
    cx = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix")
    ts.codex_rollout(cx, CX_ID)
    res = ao("ao", "import", "--json", cwd=repo, rc=1)
    got = _results(res)
    assert got["claude-code"]["status"] == "refused"
    assert str(bad) in got["claude-code"]["message"]
    assert len(got["claude-code"]["message"].splitlines()) == 1
    assert set(sessions_by_id(repo)) == {f"{repo.name}-4a21"}
    # Said once: the next run mentions it without failing.
    res = ao("ao", "import", "--json", cwd=repo)
    assert _results(res)["claude-code"]["status"] == "nothing"


def test_codex_managed_worktree_imported_and_its_admin_files_come_back(repo, ao_env):
    wt = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix", tmux="cx-4a21")
    ts.codex_rollout(wt, CX_ID)
    dirty(wt)
    before_tool = ts.digests(ts.home() / ".codex")
    ao("ao", "import", "--tool", "codex", cwd=repo)
    sid = f"{repo.name}-4a21"
    s = sessions_by_id(repo)[sid]
    assert (s["harness"], s["agent_session_id"], s["tool"], s["tmux_session"], s["branch"]) == (
        "codex", CX_ID, "codex", "cx-4a21", "codex-fix")
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo)
    assert {r["status"] for r in _results(res).values()} == {"nothing"}
    admin = git("rev-parse", "--path-format=absolute", "--git-dir", cwd=wt).strip()
    names = ("codex-worktree.json", "codex-thread.json")
    saved = [Path(admin, n).read_bytes() for n in names]
    before = state(wt)
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists()
    # Preserve captured; the tool's files under ~/.codex are as they were.
    after_tool = ts.digests(ts.home() / ".codex")
    assert {k: v for k, v in after_tool.items() if "/worktrees/" not in k} == {
        k: v for k, v in before_tool.items() if "/worktrees/" not in k}
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))
    admin = git("rev-parse", "--path-format=absolute", "--git-dir", cwd=wt).strip()
    assert [Path(admin, n).read_bytes() for n in names] == saved


def test_codex_archived_thread_is_not_imported_as_live(repo, ao_env):
    wt = ts.codex_worktree(repo, "9f00", thread=CX_ID, branch="codex-old")
    ts.codex_rollout(wt, CX_ID, archived=True)
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo)
    r = _results(res)[f"{repo.name}-9f00"]
    assert r["status"] == "nothing" and "archived" in r["message"]
    assert sessions_by_id(repo) == {}


def test_codex_unknown_metadata_version_and_bad_rollout_refused(repo, ao_env):
    wt = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix", version=7)
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=1)
    r = _results(res)["codex"]
    assert r["status"] == "refused" and "codex-worktree.json" in r["message"] \
        and "version 7" in r["message"]
    assert sessions_by_id(repo) == {}
    ts.codex_rollout(wt, CX_ID, first='{"type": "turn_context"}')
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=1)
    # The rollout is new and refused; the metadata was reported before.
    got = sorted((r["status"], "rollout-" in r["message"])
                 for r in json.loads(res.stdout)["results"])
    assert got == [("nothing", False), ("refused", True)]


def test_conductor_workspace_with_claude_code_in_it(repo, ao_env):
    ws = ts.conductor_workspace(repo, "tokyo")
    ts.claude_transcript(ws, CC_ID)
    dirty(ws)
    ao("ao", "import", "--tool", "conductor", cwd=repo)
    s = sessions_by_id(repo)["tokyo"]
    assert (s["tool"], s["tool_id"], s["harness"], s["agent_session_id"]) == (
        "conductor", f"{repo.name}/tokyo", "claude", CC_ID)
    before = state(ws)
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(ws))


def test_several_tools_at_once_and_unknown_tool(repo, ao_env):
    cc = ts.claude_worktree(repo, "cc")
    ts.claude_transcript(cc, CC_ID)
    cx = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix")
    ts.codex_rollout(cx, CX_ID)
    ws = ts.conductor_workspace(repo, "paris")
    res = ao("ao", "import", "--json", cwd=repo)
    assert {k: r["status"] for k, r in _results(res).items()} == {
        "cc": "ok", f"{repo.name}-4a21": "ok", "paris": "ok"}
    assert sessions_by_id(repo)["paris"]["harness"] == ""
    res = ao("ao", "import", "--tool", "nope", cwd=repo, rc=129)
    assert "unknown tool 'nope'" in res.stderr
    ao("ao", "import", "--tool", "codex", "--tool", "conductor", "--from", str(ws), cwd=repo,
       rc=129)


def test_import_tools_setting_makes_shutdown_and_boot_import_first(repo, ao_env):
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    ao("ao", "config", "set", "import.tools", "claude-code, codex", cwd=repo)
    ao("ao", "config", "set", "import.tools", "cursor", cwd=repo, rc=129)
    wt = ts.claude_worktree(repo, "night")
    ts.claude_transcript(wt, CC_ID)
    dirty(wt)
    before = state(wt)
    res = ao("ao-preserve", "--all", "--json", cwd=repo)
    acts = [(r["action"], r["id"], r["status"]) for r in json.loads(res.stdout)["results"]]
    assert acts == [("import", "night", "ok"), ("preserve", "night", "ok")]
    assert not wt.exists()
    # At boot the tool still names the worktree; it is already known (pending).
    res = ao("ao-restore", "--json", cwd=repo)
    assert [(r["action"], r["status"]) for r in json.loads(res.stdout)["results"]] == [
        ("restore", "ok")]
    assert_restored(before, state(wt))


def test_summaries_count_imports_apart_and_a_pending_session_is_not_called_ended(
        repo, ao_env):
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    wt = ts.claude_worktree(repo, "agent1")
    ts.claude_transcript(wt, CC_ID)
    dirty(wt)
    res = ao("ao-preserve", "--all", cwd=repo)
    assert res.stderr.splitlines()[-1] == "preserve: 1 ok; import: 1 ok"
    # Its worktree is in git-ao's trash, not ended in Claude Code: git-ao holds it.
    res = ao("ao-restore", cwd=repo)
    lines = [line for line in res.stdout.splitlines() if line.startswith("import")]
    assert all("not live" not in line and "ended" not in line for line in lines), lines
    assert all(line.count("(") <= 1 for line in lines), lines
    assert res.stderr.splitlines()[-1].startswith("restore: 1 ok")


def test_tool_ended_session_said_in_one_line_without_nested_parentheses(repo, ao_env):
    wt = ts.claude_worktree(repo, "gone")
    ts.claude_transcript(wt, CC_ID)
    git("worktree", "remove", str(wt), cwd=repo)
    res = ao("ao", "import", "--tool", "claude-code", cwd=repo)
    line = next(x for x in res.stdout.splitlines() if "gone" in x)
    assert "not live in claude-code" in line and "(" not in line.split("\t")[-1], line


def test_builtin_resume_runs_in_the_tools_tmux_session(repo, ao_env, monkeypatch):
    bin_dir = ao_env / "bin"
    bin_dir.mkdir()
    calls = ao_env / "tmux-calls"
    (bin_dir / "tmux").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {calls}\n')
    (bin_dir / "tmux").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    wt = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix", tmux="cx.4a21")
    ao("ao", "import", "--tool", "codex", cwd=repo)
    ao("ao-preserve", "--all", cwd=repo)
    res = ao("ao-restore", cwd=repo)
    # Off by default: the hint names the exact command.
    assert (f"hint: resume {repo.name}-4a21: tmux new-session -d -s cx_4a21 -c {wt} "
            f"codex resume {CX_ID}") in res.stderr
    assert not calls.exists()
    ao("ao", "config", "set", "relaunch.builtin", "true", cwd=repo)
    ao("ao-preserve", "--all", cwd=repo)
    res = ao("ao-restore", "--json", cwd=repo)
    assert [r["action"] for r in json.loads(res.stdout)["results"]] == ["restore", "relaunch"]
    assert calls.read_text().splitlines() == [
        "new-session", "-d", "-s", "cx_4a21", "-c", str(wt), "codex", "resume", CX_ID]


def test_dry_run_registers_nothing_and_remembers_nothing(repo, ao_env):
    cc = ts.claude_worktree(repo, "cc")
    ts.claude_transcript(cc, CC_ID)
    ts.claude_transcript(cc / "x", "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d", first="{cut")
    res = ao("ao", "import", "-n", "--json", cwd=repo, rc=1)
    got = _results(res)
    assert got["cc"]["status"] == "ok" and got["cc"]["message"].startswith("would register")
    assert got["claude-code"]["status"] == "refused"
    assert sessions_by_id(repo) == {}
    # Nothing was remembered: the real run reports the refusal again.
    res = ao("ao", "import", "--json", cwd=repo, rc=1)
    assert _results(res)["claude-code"]["status"] == "refused"
    assert set(sessions_by_id(repo)) == {"cc"}


def test_codex_cli_worktree_beside_its_repository_found_from_its_rollout(repo, ao_env):
    # `codex --worktree` puts it beside the repository (<repo>.<branch>) and marks it
    # with codex-worktree.json; only the rollout run there leads to it.
    wt = repo.parent / f"{repo.name}.cx-side"
    git("worktree", "add", "-q", "-b", "cx-side", str(wt), cwd=repo)
    admin = Path(git("rev-parse", "--path-format=absolute", "--git-dir", cwd=wt).strip())
    (admin / "codex-worktree.json").write_text(json.dumps({
        "version": 1, "manager": "codex-cli", "backend": "git", "source": "cli",
        "location": "sibling", "id": "ab", "name": "cx-side", "slug": "cx-side",
        "branch": "cx-side", "repoId": "ab", "repoName": repo.name,
        "sourceRepoRoot": str(repo), "originalRelativeCwd": "", "worktreeGitRoot": str(wt),
        "workspaceCwd": str(wt), "createdAt": 1, "updatedAt": 1, "ownerThreadId": None,
        "tmuxSession": None}))
    plain = repo.parent / f"{repo.name}.plain"
    git("worktree", "add", "-q", "-b", "plain", str(plain), cwd=repo)
    ts.codex_rollout(wt, CX_ID)
    ts.codex_rollout(plain, "029dbff7-c97d-7511-9af5-1cee07dd1ab3")  # not Codex's worktree
    ao("ao", "import", "--tool", "codex", cwd=repo)
    got = sessions_by_id(repo)
    assert set(got) == {f"{repo.name}.cx-side"}
    assert got[f"{repo.name}.cx-side"]["agent_session_id"] == CX_ID


def _tree(root):
    """Every path under `root` with its bytes and mtime (what a write would change)."""
    out = {}
    for d, _dirs, files in os.walk(root):
        out[d] = None
        for f in files:
            p = os.path.join(d, f)
            out[p] = (Path(p).read_bytes(), os.stat(p).st_mtime_ns)
    return out


def test_a_dry_run_of_preserve_all_shows_what_the_import_first_would_preserve(repo, ao_env):
    """With import.tools set, the real --all imports other tools' sessions, then
    preserves them: the dry run says both for each, as the real run would judge it,
    and writes nothing (no data dir change, no ref, the worktree left)."""
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    wt = ts.claude_worktree(repo, "night")
    ts.claude_transcript(wt, CC_ID)
    dirty(wt)
    data, refs = _tree(os.environ["AO_DATA_DIR"]), git("for-each-ref", cwd=repo)
    before = state(wt)
    res = ao("ao-preserve", "--all", "-n", "--json", cwd=repo)
    got = [(r["action"], r["id"], r["status"], r["message"].split(":")[0])
           for r in json.loads(res.stdout)["results"]]
    assert got == [("import", "night", "ok", f"would register worker from claude-code at {wt}"),
                   ("preserve", "night", "ok", "would register and preserve and remove")]
    plain = ao("ao-preserve", "--all", "-n", cwd=repo)
    assert "nothing to preserve" not in plain.stderr
    assert _tree(os.environ["AO_DATA_DIR"]) == data
    assert git("for-each-ref", cwd=repo) == refs
    assert state(wt) == before


def _admin(wt):
    return Path(git("rev-parse", "--path-format=absolute", "--git-dir", cwd=wt).strip())


def test_every_unreadable_codex_file_is_refused_on_a_line_of_its_own(repo, ao_env):
    """Two malformed codex-worktree.json and a codex-thread.json of an unknown version:
    each file is named on its own line, in --json and in the log, none folded into
    a count; the next run says each again as reported before."""
    bad = []
    for hexid in ("bad1", "bad2"):
        wt = ts.codex_worktree(repo, hexid, thread=CX_ID, branch=f"cx-{hexid}")
        (_admin(wt) / "codex-worktree.json").write_text('{"version":1,')
        bad.append(str(_admin(wt) / "codex-worktree.json"))
    wt = ts.codex_worktree(repo, "bad3", thread=CX_ID, branch="cx-bad3")
    (_admin(wt) / "codex-thread.json").write_text('{"version": 2, "ownerThreadId": "x"}')
    bad.append(str(_admin(wt) / "codex-thread.json"))
    good = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix")
    ts.codex_rollout(good, CX_ID)
    res = ao("ao", "import", "--tool", "codex", cwd=repo, rc=1)
    refused = [line for line in res.stdout.splitlines() if "\trefused\t" in line]
    assert len(refused) == 3, res.stdout
    for path, line in zip(sorted(bad), sorted(refused), strict=True):
        assert path in line and "more" not in line, line
    assert "version 2" in next(line for line in refused if "codex-thread.json" in line)
    assert set(sessions_by_id(repo)) == {f"{repo.name}-4a21"}
    logged = [e for e in json.loads(ao("ao", "log", "-n", "50", "--json", cwd=repo).stdout)[
        "entries"] if e["action"] == "import" and e["decision"] == "refused"]
    assert sorted(p for p in bad if any(p in e["line"] for e in logged)) == sorted(bad)
    # Said once: each is now a note, still named.
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo)
    notes = [r for r in json.loads(res.stdout)["results"] if r["id"] == "codex"]
    assert [r["status"] for r in notes] == ["nothing"] * 3
    assert all(any(p in r["message"] for r in notes) for p in bad)


def test_every_unreadable_transcript_is_refused_on_a_line_of_its_own(repo, ao_env):
    cc = ts.claude_worktree(repo, "cc")
    ts.claude_transcript(cc, CC_ID)
    cut = [ts.claude_transcript(cc / d, sid, first="{cut") for d, sid in (
        ("a", "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"), ("b", "7a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"))]
    res = ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo, rc=1)
    refused = [r["message"] for r in json.loads(res.stdout)["results"] if r["status"] == "refused"]
    assert len(refused) == 2 and all(str(p) in m for p, m in zip(cut, sorted(refused), strict=True))
    assert not any("more" in m for m in refused)
    assert set(sessions_by_id(repo)) == {"cc"}


def test_codex_archived_threads_are_reported_wherever_their_worktree_was(repo, ao_env):
    """An archived thread is reported (status nothing), never skipped: in a worktree
    Codex made beside the repository, and in one under ~/.codex/worktrees that is
    gone; a gone directory Codex is not known to have made is not."""
    side = ts.codex_sibling_worktree(repo, "cx-side", thread=CX_ID)
    ts.codex_rollout(side, CX_ID, archived=True)
    home_wt = ts.codex_worktree(repo, "77aa", thread=None, branch="cx-home")
    old = "029dbff7-c97d-7511-9af5-1cee07dd1ab3"
    ts.codex_rollout(home_wt, old, archived=True)
    git("worktree", "remove", "--force", str(home_wt), cwd=repo)
    ts.codex_rollout(repo.parent / "elsewhere-gone", "039dbff7-c97d-7511-9af5-1cee07dd1ab4",
                     archived=True)
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo)
    got = {r["id"]: (r["status"], r["message"]) for r in json.loads(res.stdout)["results"]}
    assert got == {
        side.name: ("nothing", (f"not live in codex: its Codex session {CX_ID} is archived; "
                    "not imported")),
        f"{repo.name}-77aa": ("nothing", (f"not live in codex: its Codex session {old} is "
                              "archived and its worktree is gone; not imported"))}
    assert sessions_by_id(repo) == {}



NEWLINE = "paths containing a newline are not supported"


def test_a_worktree_whose_path_holds_a_newline_is_refused_for_that_reason(tmp_path, ao_env):
    """git-ao records no path with a newline (`git ao add` refuses one, 129): an
    import says that, the one true reason, of each tool's worktree there (dry run
    or not), not that it is no linked worktree, nor nothing at all."""
    repo = tmp_path / "re\npo"
    git("init", "-q", str(repo), cwd=tmp_path)
    init_repo(repo)
    cc = ts.claude_worktree(repo, "nl")
    ts.claude_transcript(cc, CC_ID)
    cx = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-nl")
    side = ts.codex_sibling_worktree(repo, "cx-side", thread=CX_ID)
    ts.codex_rollout(side, "029dbff7-c97d-7511-9af5-1cee07dd1ab3")
    ws = ts.conductor_workspace(repo, "tokyo")
    add = ao("ao", "add", str(cc), cwd=tmp_path, rc=129)
    assert add.stderr.strip() == f"error: {NEWLINE}: {str(cc)!r}"
    expected = {"claude-code": {f"claude-code: {NEWLINE}: {str(cc)!r}"},
                "codex": {f"codex: {NEWLINE}: {str(p)!r}" for p in (cx, side)},
                "conductor": {f"conductor {repo.name}/tokyo: {NEWLINE}: {str(ws)!r}"}}
    for tool, said in expected.items():
        for dry in (["-n"], []):
            res = ao("ao", "import", "--tool", tool, "--json", *dry, cwd=tmp_path, rc=1)
            got = json.loads(res.stdout)["results"]
            assert {r["status"] for r in got} == {"refused"}, got
            assert {r["message"] for r in got} == said
    # Plain output: each still one line.
    res = ao("ao", "import", "--tool", "codex", "--tool", "claude-code", cwd=tmp_path)
    assert len(res.stdout.splitlines()) == 3, res.stdout
    assert sessions_by_id(tmp_path) == {}


def test_codex_metadata_not_shaped_as_codex_writes_it_is_refused(repo, ao_env):
    """codex-worktree.json without the fields Codex itself cannot read it without is
    refused with its worktree, one line naming the file and what it lacks."""
    wt = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix")
    meta = _admin(wt) / "codex-worktree.json"
    meta.write_text(json.dumps({"version": 1, "ownerThreadId": CX_ID, "createdAt": "today"}))
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=1)
    assert [(r["status"], r["message"]) for r in json.loads(res.stdout)["results"]] == [
        ("refused", (f"codex: '{meta}' has no manager, backend, id, name, slug, repoId, "
                    "repoName, sourceRepoRoot, originalRelativeCwd, worktreeGitRoot, "
                    "workspaceCwd, updatedAt; createdAt is the text 'today', not as Codex "
                    "writes it (an integer); Codex metadata git-ao cannot read; "
                    f"its worktree {wt} is not imported"))]
    assert sessions_by_id(repo) == {}


def test_a_dry_run_gives_no_creation_time_for_what_it_would_register(repo, ao_env):
    """Nothing is registered by a dry run, so it has no created_at to give (null, not
    1970); the real run gives the time it registered the session."""
    import time

    wt = ts.claude_worktree(repo, "when")
    ts.claude_transcript(wt, CC_ID)
    (dry,) = json.loads(ao("ao", "import", "-n", "--json", cwd=repo).stdout)["results"]
    assert dry["message"].startswith("would register") and dry["created_at"] is None
    before = time.time()
    (real,) = json.loads(ao("ao", "import", "--json", cwd=repo).stdout)["results"]
    made = time.mktime(time.strptime(real["created_at"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert before - 2 <= made <= time.time() + 1, real["created_at"]
    assert real["created_at"] == sessions_by_id(repo)["when"]["created_at"]
    assert set(dry) == set(real)


def test_a_worktree_git_links_by_relative_paths_is_one_under_a_newline_path_too(tmp_path):
    """git 2.48's worktree.useRelativePaths writes the `.git` file relative to the
    worktree and the admin dir's `gitdir` relative to the admin dir; read without
    git (a path holding a newline), such a worktree is still a linked one."""
    from git_ao.importers.worktrees import admin_dir
    repo = tmp_path / "re\npo"
    git("init", "-q", str(repo), cwd=tmp_path)
    init_repo(repo)
    wt = tmp_path / "wt\nx"
    git("worktree", "add", "-q", "-b", "rel", str(wt), cwd=repo)
    admin = (wt / ".git").read_text().removeprefix("gitdir: ").strip()
    (wt / ".git").write_text(f"gitdir: {os.path.relpath(admin, wt)}\n")
    with open(os.path.join(admin, "gitdir"), "w") as fh:
        fh.write(os.path.relpath(wt / ".git", admin) + "\n")
    assert admin_dir(str(wt)) == os.path.normpath(admin)


def test_codex_home_moved_by_codex_home_is_read_too(repo, ao_env, monkeypatch):
    """Codex keeps everything in `$CODEX_HOME` when it is set: its worktrees and
    rollouts are found there by `git ao import` with no --from, for Codex and for a
    Conductor workspace that ran Codex, and `~/.codex` is still read."""
    old = ts.codex_worktree(repo, "0a0a", thread=CX_ID, branch="codex-default")
    ts.codex_rollout(old, CX_ID)
    monkeypatch.setenv("CODEX_HOME", str(ao_env / "codex-home"))
    moved_id = "029dbff7-c97d-7511-9af5-1cee07dd1ab4"
    wt = ts.codex_worktree(repo, "4a21", thread=moved_id, branch="codex-moved")
    ts.codex_rollout(wt, moved_id)
    ws = ts.conductor_workspace(repo, "lima")
    ts.codex_rollout(ws, "029dbff7-c97d-7511-9af5-1cee07dd1ab5")
    assert str(wt).startswith(str(ao_env / "codex-home"))
    ao("ao", "import", cwd=repo)
    got = sessions_by_id(repo)
    assert (got[f"{repo.name}-4a21"]["tool"], got[f"{repo.name}-4a21"]["agent_session_id"]) \
        == ("codex", moved_id)
    assert got[f"{repo.name}-0a0a"]["agent_session_id"] == CX_ID
    assert (got["lima"]["harness"], got["lima"]["agent_session_id"]) == (
        "codex", "029dbff7-c97d-7511-9af5-1cee07dd1ab5")


def test_claude_transcripts_moved_by_claude_config_dir_are_read_too(repo, ao_env, monkeypatch):
    """Claude Code keeps its transcripts in `$CLAUDE_CONFIG_DIR/projects` when the
    variable is set: `git ao import` with no --from finds them there, for Claude
    Code's worktrees and for a Conductor workspace that ran Claude Code, and still
    reads `~/.claude/projects`."""
    old = ts.claude_worktree(repo, "at-home")
    ts.claude_transcript(old, "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ao_env / "claude-config"))
    wt = ts.claude_worktree(repo, "moved")
    assert ts.claude_transcript(wt, CC_ID).is_relative_to(ao_env / "claude-config")
    ws = ts.conductor_workspace(repo, "oslo")
    ts.claude_transcript(ws, "7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e")
    ao("ao", "import", cwd=repo)
    got = sessions_by_id(repo)
    assert (got["moved"]["tool"], got["moved"]["agent_session_id"]) == ("claude-code", CC_ID)
    assert got["at-home"]["agent_session_id"] == "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"
    assert (got["oslo"]["harness"], got["oslo"]["agent_session_id"]) == (
        "claude", "7b8c9d0e-1f2a-4b3c-9d4e-5f6a7b8c9d0e")


def test_codex_compressed_rollouts_are_read(repo, ao_env):
    """Codex compresses a rollout idle seven days to `.jsonl.zst`: an owner thread
    archived that long ago still makes its worktree not live, a live one still names
    the session, and a compressed file that is no zstd is refused naming it."""
    gone = ts.codex_worktree(repo, "9f00", thread=CX_ID, branch="codex-old")
    ts.codex_compress(ts.codex_rollout(gone, CX_ID, archived=True))
    live_id = "029dbff7-c97d-7511-9af5-1cee07dd1ab6"
    live = ts.codex_worktree(repo, "4a21", thread=live_id, branch="codex-live")
    ts.codex_compress(ts.codex_rollout(live, live_id))
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo)
    got = _results(res)
    assert got[f"{repo.name}-9f00"]["status"] == "nothing"
    assert "archived" in got[f"{repo.name}-9f00"]["message"]
    assert set(sessions_by_id(repo)) == {f"{repo.name}-4a21"}
    assert sessions_by_id(repo)[f"{repo.name}-4a21"]["agent_session_id"] == live_id
    bad = ts.codex_home() / "sessions" / "2026" / "12" / "02" / (
        "rollout-2026-12-02T10-00-00-039dbff7-c97d-7511-9af5-1cee07dd1ab7.jsonl.zst")
    bad.write_bytes(b"not zstd\n")
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=None)
    refused = [r for r in json.loads(res.stdout)["results"] if r["status"] == "refused"]
    assert len(refused) == 1 and str(bad) in refused[0]["message"]


def test_codex_cli_worktree_found_from_its_compressed_rollout(repo, ao_env):
    wt = ts.codex_sibling_worktree(repo, "cx-side")
    ts.codex_compress(ts.codex_rollout(wt, CX_ID))
    ao("ao", "import", "--tool", "codex", cwd=repo)
    assert sessions_by_id(repo)[f"{repo.name}.cx-side"]["agent_session_id"] == CX_ID


def test_worktrees_the_import_first_registers_are_not_named_unsaved(repo, ao_env):
    """With import.tools set, the worktree another tool made is imported, then saved:
    neither the dry run, nor the real run, nor doctor names it among the linked
    worktrees no session holds; one no tool knows still is named."""
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    wt = ts.claude_worktree(repo, "night")
    ts.claude_transcript(wt, CC_ID)
    dirty(wt)
    loose = repo.parent / f"{repo.name}-loose"
    git("worktree", "add", "-q", "-b", "loose", loose, cwd=repo)
    ao("ao", "add", loose, "--id", "loose", cwd=repo)
    git("worktree", "add", "-q", "-b", "other", f"{loose}2", cwd=repo)
    doctor = [c["detail"] for c in json.loads(ao("ao", "doctor", "--json", cwd=repo,
                                                 rc=None).stdout)["checks"]
              if c["name"] == "unregistered"]
    assert len(doctor) == 1, doctor
    dry = ao("ao-preserve", "--all", "-n", cwd=repo, rc=None)
    assert "would register and preserve and remove" in dry.stdout
    for said in (dry.stderr, *doctor):
        assert f"{loose}2" in said and str(wt) not in said, said
    real = ao("ao-preserve", "--all", cwd=repo, rc=None)
    assert f"{loose}2" in real.stderr and str(wt) not in real.stderr, real.stderr
