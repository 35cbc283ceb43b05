"""The claude-squad, vibe-kanban and crystal adapters: what each reads from the
tool's state, built as the tool writes it, and that the tool's files stay as they
were."""

import json
import os
import shlex
import sqlite3
import uuid
from pathlib import Path

import pytest

from git_ao.importers import claude_squad, crystal, vibe_kanban
from git_ao.importers.found import Unreadable
from tests import tool_state_b as tb
from tests.support import ao, dirty, git

CLAUDE_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CODEX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _home() -> Path:
    return Path(os.environ["HOME"])


def _no_sidecars(db: Path):
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-")] == []


# --- claude-squad ----------------------------------------------------------------

def test_claude_squad_live_instance_read_with_its_facts(repo):
    wt, branch = tb.squad_worktree(repo, "fix parser")
    dirty(wt)
    state = tb.squad_state([tb.squad_instance(repo, wt, "fix parser", branch, status=1,
                                              program="/usr/local/bin/claude --verbose")])
    before = tb.files_of(state.parent)
    (f,) = claude_squad.read(state)
    assert (f.tool, f.tool_id, f.worktree, f.branch, f.harness, f.agent_session_id, f.kind,
            f.live, f.group, f.tmux_session, f.name) == (
        "claude-squad", "fix parser", wt, branch, "claude", None, "worker", True, None,
        "claudesquad_fixparser", "fix parser")
    assert claude_squad.default_sources(_home()) == [state]
    assert claude_squad.read(state.parent) == [f]  # the directory names the same file
    after = {k: v for k, v in tb.files_of(state.parent).items() if "/worktrees/" not in k}
    assert after == {k: v for k, v in before.items() if "/worktrees/" not in k}


@pytest.mark.parametrize(("program", "harness"), [
    ("aider --model ollama_chat/gemma3:1b", "aider"), ("codex", "codex"),
    ("FOO=1 gemini -y", "gemini"), ("'/opt/my tools/claude'", "claude"), ("", "")])
def test_claude_squad_harness_is_the_program_it_ran(program, harness):
    assert claude_squad.harness(program) == harness


def test_claude_squad_tmux_name_drops_white_space_and_dots():
    assert claude_squad.tmux_session("v1.2 fix\tit") == "claudesquad_v1_2fixit"


def test_claude_squad_paused_instance_is_not_live(repo):
    wt, branch = tb.squad_worktree(repo, "paused one")
    dirty(wt)
    tb.squad_pause(repo, wt, "paused one")
    state = tb.squad_state([tb.squad_instance(repo, wt, "paused one", branch, status=3)])
    (f,) = claude_squad.read(state)
    assert not f.live and not wt.exists()
    assert f.note == (f"paused: claude-squad committed its work to branch {branch} and "
                      "removed the worktree")


def test_claude_squad_paused_instance_says_only_what_git_shows(repo, tmp_path):
    """A paused instance's branch that is not in the repository, a repository that is
    gone, a worktree still there: each said as it is, never "committed to branch"."""
    gone_branch = tmp_path / "nowhere"
    kept, kbranch = tb.squad_worktree(repo, "kept")
    no_repo = tmp_path / "no-repo-wt"
    state = tb.squad_state([
        tb.squad_instance(repo, gone_branch, "no branch", "u/p", status=3),
        tb.squad_instance(tmp_path / "gone-repo", no_repo, "no repo", "u/q", status=3),
        tb.squad_instance(repo, kept, "kept", kbranch, status=3)])
    got = {f.tool_id: (f.live, f.note) for f in claude_squad.read(state)}
    assert got == {
        "no branch": (False, ("paused in claude-squad, which keeps its work on branch u/p, "
                             f"but {repo} has no branch u/p")),
        "no repo": (False, ("paused in claude-squad, which keeps its work on branch u/q, but "
                           f"its repository {tmp_path / 'gone-repo'} is no git repository now")),
        "kept": (False, ("paused in claude-squad, yet its worktree is still there: "
                        f"`git ao add {shlex.quote(str(kept))}` keeps its work"))}
    res = json.loads(ao("ao", "import", "--tool", "claude-squad", "--json", cwd=repo).stdout)
    said = {r["id"]: r["message"] for r in res["results"]}
    assert said["no-branch"] == ("not live in claude-squad no branch: paused in claude-squad, "
                                 "which keeps its work on branch u/p, but "
                                 f"{repo} has no branch u/p; not imported")


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "is not JSON"),
    ('["a"]', "is not a JSON object"),
    ('{"instances": "[]"}', "'instances' is not a list"),
    (('{"instances": [{"title": "x", "status": 4, "path": "/r", "branch": "b", "program": "c", '
     '"worktree": {"worktree_path": "/w", "repo_path": "/r", "branch_name": "b"}}]}'),
     "instance 0 ('x') has status 4, which claude-squad does not write (0, 1, 2, 3); "),
    ('{"instances": [{"title": "x", "status": 0}]}', "instance 0 ('x') has no worktree, "),
    # Every field claude-squad writes, read or not, is there in what it wrote.
    ('{"instances": [{"title": "x", "status": 0, "worktree": {"worktree_path": "/w"}}]}',
     ("instance 0 ('x') has no path, branch, program, worktree.repo_path, "
     "worktree.branch_name; ")),
])
def test_claude_squad_corrupt_or_unknown_state_refused_naming_the_file(text, says):
    state = tb.squad_state([])
    state.write_text(text)
    with pytest.raises(Unreadable) as exc:
        claude_squad.read(state)
    assert str(state) in str(exc.value) and says in str(exc.value)
    assert "\n" not in str(exc.value)


def test_claude_squad_state_refused_names_every_instance_not_shaped_as_written(repo):
    """Each instance not shaped as claude-squad writes it is refused on a line of its
    own; the others are still read."""
    wt, branch = tb.squad_worktree(repo, "good")
    good = tb.squad_instance(repo, wt, "good", branch)
    state = tb.squad_state([{**good, "status": 9}, good, {**good, "program": None}])
    with pytest.raises(Unreadable) as exc:
        claude_squad.read(state)
    assert exc.value.lines == [
        (f"claude-squad state '{state}': instance 0 ('good') has status 9, which claude-squad "
        "does not write (0, 1, 2, 3); not imported"),
        (f"claude-squad state '{state}': instance 2 ('good') program is null, not as "
        "claude-squad writes it (text); not imported")]
    assert [f.tool_id for f in exc.value.found] == ["good"]


def test_claude_squad_no_instances_is_nothing():
    state = tb.squad_state([])
    assert claude_squad.read(state) == []
    state.write_text('{"help_screens_seen": 0}')
    assert claude_squad.read(state) == []


# --- vibe-kanban -----------------------------------------------------------------

def test_vibe_kanban_live_workspace_read_with_its_facts(repo):
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [repo], label="fix-parser", branch="vk/1a2b-fix",
                                     agent_session_id=CLAUDE_ID)
    wt = container / repo.name
    dirty(wt)
    before = tb.files_of(db.parent)
    (f,) = vibe_kanban.read(db)
    assert (f.tool, f.tool_id, f.worktree, f.branch, f.harness, f.agent_session_id, f.kind,
            f.live, f.group, f.tmux_session, f.name) == (
        "vibe-kanban", f"{wid}/{repo.name}", wt, "vk/1a2b-fix", "claude", CLAUDE_ID, "worker",
        True, None, None, container.name)
    assert tb.files_of(db.parent) == before
    _no_sidecars(db)
    assert vibe_kanban.default_sources(_home())[0] == db
    assert vibe_kanban.read(db.parent) == [f]


def test_vibe_kanban_workspace_over_two_repositories_is_one_group(repo, make_repo):
    other = make_repo()
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [repo, other], label="both", branch="vk/both",
                                     executor="CODEX", agent_session_id=CODEX_ID)
    got = vibe_kanban.read(db)
    assert sorted(f.worktree for f in got) == sorted([container / repo.name,
                                                      container / other.name])
    assert {f.group for f in got} == {wid}
    assert {(f.harness, f.agent_session_id) for f in got} == {("codex", CODEX_ID)}
    assert len({f.tool_id for f in got}) == len({f.name for f in got}) == 2


def test_vibe_kanban_latest_session_gives_the_agent(repo):
    db = tb.vk_db()
    wid, _ = tb.vk_workspace(db, [repo], label="two", branch="vk/two",
                             agent_session_id=CLAUDE_ID)
    conn = sqlite3.connect(db)
    sid, ep = uuid.uuid4().bytes, uuid.uuid4().bytes
    conn.execute("INSERT INTO sessions (id, workspace_id, executor, created_at) "
                 "VALUES (?, ?, 'GEMINI', '2000-01-01 00:00:00')", (sid, uuid.UUID(wid).bytes))
    conn.execute("INSERT INTO execution_processes (id, session_id, run_reason, created_at) "
                 "VALUES (?, ?, 'codingagent', '2999-01-01 00:00:00')", (ep, sid))
    conn.execute("INSERT INTO coding_agent_turns (id, execution_process_id, agent_session_id) "
                 "VALUES (?, ?, 'gem-1')", (uuid.uuid4().bytes, ep))
    conn.commit()
    conn.close()
    (f,) = vibe_kanban.read(db)
    assert (f.harness, f.agent_session_id) == ("gemini", "gem-1")


def test_vibe_kanban_archived_and_cleaned_up_workspaces_are_not_live(repo, make_repo):
    other = make_repo()
    db = tb.vk_db()
    tb.vk_workspace(db, [repo], label="archived", branch="vk/archived", archived=True)
    wid, container = tb.vk_workspace(db, [other], label="expired", branch="vk/expired")
    tb.vk_cleanup(db, wid, container, [other])
    got = {f.name: f for f in vibe_kanban.read(db)}
    archived = next(f for n, f in got.items() if n.endswith("archived"))
    assert not archived.live
    assert archived.note == ("archived in vibe-kanban; its worktree is still there: "
                             f"`git ao add {shlex.quote(str(archived.worktree))}` keeps its work")
    assert (got[container.name].live, got[container.name].note) == (
        False, "vibe-kanban marked its worktree removed (worktree_deleted); its worktree is gone")


def test_vibe_kanban_cleaned_up_workspace_whose_worktree_is_still_there_says_so(repo):
    """worktree_deleted is what vibe-kanban recorded, not what is on disk: a worktree
    its cleanup left is named with how to keep it, never called removed."""
    db = tb.vk_db()
    _wid, container = tb.vk_workspace(db, [repo], label="left", branch="vk/left")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET worktree_deleted = TRUE")
    conn.commit()
    conn.close()
    (f,) = vibe_kanban.read(db)
    wt = container / repo.name
    assert (f.live, f.note) == (False, (
        "vibe-kanban marked its worktree removed (worktree_deleted); its worktree is still "
        f"there: `git ao add {shlex.quote(str(wt))}` keeps its work"))
    assert "removed its worktree" not in f.note


def test_vibe_kanban_old_layout_worktree_is_the_workspace_dir(repo):
    db = tb.vk_db()
    _, container = tb.vk_workspace(db, [repo], label="legacy", branch="vk/legacy", make=False)
    git("worktree", "add", "-q", "-b", "vk/legacy", str(container), cwd=repo)
    (f,) = vibe_kanban.read(db)
    assert f.worktree == container and f.live


def _vk_db_before_worktree_deleted():
    """A vibe-kanban database at a migration before 20260302113031, which added
    workspaces.worktree_deleted (its cleanup cleared container_ref instead)."""
    db = tb.vk_db(20260220000000)
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE workspaces DROP COLUMN worktree_deleted")
    conn.commit()
    conn.close()
    return db


def test_vibe_kanban_database_from_before_worktree_deleted(repo, make_repo):
    """Before 20260302113031 the cleanup cleared container_ref: such a workspace has
    no worktree to read; the others are read as usual."""
    other = make_repo()
    db = _vk_db_before_worktree_deleted()
    wid, container = tb.vk_workspace(db, [repo], label="kept", branch="vk/kept")
    gone, gone_dir = tb.vk_workspace(db, [other], label="gone", branch="vk/gone")
    git("worktree", "remove", "--force", str(gone_dir / other.name), cwd=other)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET container_ref = NULL WHERE id = ?",
                 (uuid.UUID(gone).bytes,))
    conn.commit()
    conn.close()
    (f,) = vibe_kanban.read(db)
    assert (f.tool_id, f.worktree, f.live) == (f"{wid}/{repo.name}", container / repo.name, True)


def test_vibe_kanban_archived_workspace_whose_container_was_cleared_is_reported(
        repo, make_repo):
    """Before 20260302113031 the cleanup cleared container_ref: an archived workspace
    so cleaned is still an archived session, reported (not live), never skipped; a
    workspace never started (no container, not archived) is still skipped."""
    other = make_repo()
    db = _vk_db_before_worktree_deleted()
    wid, container = tb.vk_workspace(db, [repo], label="done", branch="vk/done", archived=True)
    git("worktree", "remove", "--force", str(container / repo.name), cwd=repo)
    tb.vk_workspace(db, [other], label="never", branch="vk/never", make=False)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET container_ref = NULL")
    conn.commit()
    conn.close()
    (f,) = vibe_kanban.read(db)
    assert (f.tool_id, f.worktree, f.live, f.name, f.note) == (
        f"{wid}/{repo.name}", None, False, "done", "archived in vibe-kanban; it records no worktree")
    res = json.loads(ao("ao", "import", "--tool", "vibe-kanban", "--json", cwd=repo).stdout)
    assert [(r["id"], r["status"], r["message"]) for r in res["results"]] == [
        ("done", "nothing", (f"not live in vibe-kanban {wid}/{repo.name}: archived in "
         "vibe-kanban; it records no worktree; not imported"))]


@pytest.mark.parametrize("version", [20251220000000, 20260401000000])
def test_vibe_kanban_unknown_migration_refused_naming_the_file(version):
    db = tb.vk_db(version)
    with pytest.raises(Unreadable) as exc:
        vibe_kanban.read(db)
    assert str(db) in str(exc.value) and "format this git-ao does not know" in str(exc.value)
    _no_sidecars(db)


def test_vibe_kanban_database_without_what_its_migrations_leave_is_refused(repo):
    """A known migration number does not prove the tables: one missing a table or a
    column read is refused, one line naming the file and each thing it lacks, even
    with no workspace that would have read it."""
    db = tb.vk_db()
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE coding_agent_turns")
    conn.execute("ALTER TABLE workspaces DROP COLUMN worktree_deleted")
    conn.commit()
    conn.close()
    with pytest.raises(Unreadable) as exc:
        vibe_kanban.read(db)
    assert str(exc.value) == (
        f"vibe-kanban database '{db}' at migration {tb.VK_LATEST}: workspaces has no "
        "worktree_deleted; no coding_agent_turns table; a format this git-ao does not know")
    res = json.loads(ao("ao", "import", "--tool", "vibe-kanban", "--json", cwd=repo,
                        rc=1).stdout)
    assert [(r["status"], r["message"]) for r in res["results"]] == [
        ("refused", f"vibe-kanban: {exc.value}")]
    _no_sidecars(db)


def test_vibe_kanban_corrupt_or_foreign_database_refused_naming_the_file(tmp_path):
    db = tb.vk_db()
    db.write_bytes(b"SQLite format 3\x00" + b"\x13" * 400)
    with pytest.raises(Unreadable) as exc:
        vibe_kanban.read(db)
    assert str(db) in str(exc.value)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(Unreadable, match="not a vibe-kanban database"):
        vibe_kanban.read(other)


def test_vibe_kanban_database_with_a_journal_read_from_a_copy(repo):
    db = tb.vk_db()
    tb.vk_workspace(db, [repo], label="busy", branch="vk/busy")
    journal = Path(str(db) + "-journal")
    journal.write_bytes(b"")  # a hot journal's name: vibe-kanban mid-write
    before = tb.files_of(db.parent)
    assert len(vibe_kanban.read(db)) == 1
    assert tb.files_of(db.parent) == before


# --- crystal ---------------------------------------------------------------------

def test_crystal_live_session_read_with_its_facts(repo):
    db = tb.crystal_db()
    sid, wt = tb.crystal_session(db, repo, "fix-parser",
                                 panels=(("terminal", None), ("claude", CLAUDE_ID)))
    dirty(wt)
    before = tb.files_of(db.parent)
    (f,) = crystal.read(db)
    assert (f.tool, f.tool_id, f.worktree, f.branch, f.harness, f.agent_session_id, f.kind,
            f.live, f.group, f.tmux_session) == (
        "crystal", sid, wt, None, "claude", CLAUDE_ID, "worker", True, None, None)
    assert tb.files_of(db.parent) == before
    _no_sidecars(db)
    assert crystal.default_sources(_home()) == [db]
    assert crystal.read(db.parent) == [f]


def test_crystal_active_ai_panel_names_the_agent(repo):
    db = tb.crystal_db()
    tb.crystal_session(db, repo, "both", panels=(("claude", CLAUDE_ID), ("codex", CODEX_ID)),
                       active=1)
    (f,) = crystal.read(db)
    assert (f.harness, f.agent_session_id) == ("codex", CODEX_ID)


def test_crystal_codex_session_and_a_session_with_no_agent(repo):
    db = tb.crystal_db()
    tb.crystal_session(db, repo, "cx", tool_type="codex",
                       panels=(("claude", CLAUDE_ID), ("codex", CODEX_ID)))
    tb.crystal_session(db, repo, "plain", tool_type="none")
    got = {f.worktree.name: (f.harness, f.agent_session_id) for f in crystal.read(db)}
    assert got == {"cx": ("codex", CODEX_ID), "plain": ("", None)}


def test_crystal_archived_session_is_not_live_and_main_repo_session_skipped(repo):
    db = tb.crystal_db()
    sid, wt = tb.crystal_session(db, repo, "old", panels=(("claude", CLAUDE_ID),))
    dirty(wt)
    tb.crystal_archive(db, repo, sid, wt)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO sessions (id, name, initial_prompt, worktree_name, worktree_path, "
                 "is_main_repo) VALUES ('m', 'main', '', 'main', ?, 1)", (str(repo),))
    conn.commit()
    conn.close()
    (f,) = crystal.read(db)
    assert (f.tool_id, f.live, f.note) == (sid, False, "archived in crystal")
    # Archived, but crystal's removal of the worktree failed: named, with how to keep it.
    sid2, wt2 = tb.crystal_session(db, repo, "kept-dir")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET archived = 1 WHERE id = ?", (sid2,))
    conn.commit()
    conn.close()
    got = {f.tool_id: f for f in crystal.read(db)}
    assert got[sid2].note == (f"archived in crystal; its worktree is still there: "
                              f"`git ao add {shlex.quote(str(wt2))}` keeps its work")


def test_crystal_database_from_before_panels_gives_the_claude_session_id(repo):
    db = tb.crystal_db(tb.CRYSTAL_TABLES_BEFORE_PANELS)
    sid, _ = tb.crystal_session(db, repo, "early")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET claude_session_id = ? WHERE id = ?", (CLAUDE_ID, sid))
    conn.commit()
    conn.close()
    (f,) = crystal.read(db)
    assert (f.harness, f.agent_session_id, f.live) == ("claude", CLAUDE_ID, True)


def test_crystal_corrupt_or_unknown_database_refused_naming_the_file(tmp_path):
    db = tb.crystal_db()
    db.write_bytes(b"not a database at all" * 50)
    with pytest.raises(Unreadable) as exc:
        crystal.read(db)
    assert str(db) in str(exc.value) and "\n" not in str(exc.value)
    db.unlink()
    db = tb.crystal_db("CREATE TABLE sessions (id TEXT PRIMARY KEY, worktree_path TEXT);")
    with pytest.raises(Unreadable) as exc:
        crystal.read(db)
    assert str(db) in str(exc.value) and "sessions has no archived" in str(exc.value)
    _no_sidecars(db)


@pytest.mark.parametrize(("tables", "lacks"), [
    (("CREATE TABLE sessions (id TEXT PRIMARY KEY, worktree_path TEXT, archived BOOLEAN, "
     "tool_type TEXT);"),
     ("sessions has no name, initial_prompt, worktree_name, status; no tool_panels table, "
     "which crystal made with sessions.tool_type")),
    (tb.CRYSTAL_TABLES.split("CREATE TABLE tool_panels")[0],
     "no tool_panels table, which crystal made with sessions.active_panel_id"),
    (tb.CRYSTAL_TABLES.replace("title TEXT NOT NULL, state TEXT,", "title TEXT NOT NULL,"),
     "tool_panels has no state"),
])
def test_crystal_database_not_shaped_as_crystal_writes_it_is_refused(repo, tables, lacks):
    """crystal writes its first schema's sessions columns and archived everywhere, and
    tool_panels in every release that has tool_type or active_panel_id: a database
    that lacks any of it is refused, one line naming the file and what it lacks."""
    db = tb.crystal_db(tables)
    if "initial_prompt" in tables:
        tb.crystal_session(db, repo, "x")
    else:
        sqlite3.connect(db).execute(
            "INSERT INTO sessions (id, worktree_path, archived) VALUES ('s', ?, 0)",
            (str(repo / "worktrees" / "x"),)).connection.commit()
    with pytest.raises(Unreadable) as exc:
        crystal.read(db)
    assert str(exc.value) == (f"crystal database '{db}': {lacks}; a format this git-ao does "
                              "not know")
    res = json.loads(ao("ao", "import", "--tool", "crystal", "--json", cwd=repo, rc=1).stdout)
    assert [(r["status"], r["message"]) for r in res["results"]] == [
        ("refused", f"crystal: {exc.value}")]
    _no_sidecars(db)


def test_crystal_panel_state_that_is_not_json_gives_no_id(repo):
    db = tb.crystal_db()
    sid, _ = tb.crystal_session(db, repo, "odd", panels=(("claude", CLAUDE_ID),))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE tool_panels SET state = '{broken' WHERE session_id = ?", (sid,))
    conn.commit()
    conn.close()
    (f,) = crystal.read(db)
    assert (f.harness, f.agent_session_id) == ("claude", None)


def test_the_fixtures_write_what_the_tools_write():
    """state.json is indented as Go's MarshalIndent and holds `instances` as an array."""
    state = tb.squad_state([])
    assert json.loads(state.read_text()) == {"help_screens_seen": 1, "instances": []}
    assert state.read_text().startswith('{\n  "help_screens_seen"')
