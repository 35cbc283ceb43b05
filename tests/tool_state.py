"""Tools' state built the way each tool writes it, for the import tests.

Claude Code: `claude --worktree NAME` makes `<repo>/.claude/worktrees/NAME` on
branch `worktree-NAME`; transcripts are `~/.claude/projects/<key>/<id>.jsonl`
(`$CLAUDE_CONFIG_DIR/projects` when that is set), the key being the cwd with
every character not a letter or digit made `-`, each line a JSON object (the
first a summary naming no cwd, then messages carrying `sessionId`, `cwd`,
`gitBranch`, `version`).
Codex, its home `$CODEX_HOME` when set, else `~/.codex`: a rollout
`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` whose first line is
`{"timestamp", "type": "session_meta", "payload": {id, cwd, ...}}` (RolloutLine
of codex-rs/protocol); app worktrees `~/.codex/worktrees/<hex>/<repo>` with
`codex-worktree.json` and `codex-thread.json` (serde camelCase of
WorktreeMetadata / WorktreeThreadMetadata) at `git rev-parse --git-path`;
`codex --worktree`'s `<repo>.<branch>` beside the repository, with the same two
files (manager.rs ensure_worktree writes the thread file first, with no owner).
Conductor: `~/conductor/workspaces/<repo>/<name>`, a linked worktree; for a
repository added before Conductor 0.25.0, `<repo>/.conductor/<name>` inside the
repository's root (docs.conductor.build, "Nested source directories"; its
conductor.json page names `~/my-repo/.conductor/tokyo`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from tests.support import git


def home() -> Path:
    return Path(os.environ["HOME"])


def claude_dir() -> Path:
    """Where Claude Code writes: `$CLAUDE_CONFIG_DIR` when set and not empty, else
    `~/.claude`."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or home() / ".claude")


def codex_home() -> Path:
    """Where Codex writes: `$CODEX_HOME` when set and not empty, else `~/.codex`."""
    return Path(os.environ.get("CODEX_HOME") or home() / ".codex")


def claude_worktree(repo: Path, name: str) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git("worktree", "add", "-q", "-b", f"worktree-{name}", str(path), cwd=repo)
    return path


def claude_transcript(cwd: Path, session_id: str, *, first: str | None = None,
                      project_key: str | None = None) -> Path:
    key = project_key or re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    d = claude_dir() / "projects" / key
    d.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "summary", "summary": "Fix the parser",
                         "leafUuid": "0b6c1d2e-0000-4000-8000-000000000001"})]
    for n in range(2):
        lines.append(json.dumps({
            "parentUuid": None, "isSidechain": False, "userType": "external",
            "cwd": str(cwd), "sessionId": session_id, "version": "2.1.3",
            "gitBranch": "worktree-x", "type": "user" if n == 0 else "assistant",
            "message": {"role": "user", "content": "fix the parser"},
            "uuid": f"0b6c1d2e-0000-4000-8000-00000000001{n}",
            "timestamp": f"2026-12-02T10:00:0{n}Z"}))
    path = d / f"{session_id}.jsonl"
    path.write_text((first + "\n" if first is not None else "") + "\n".join(lines) + "\n")
    return path


def codex_rollout(cwd: Path, session_id: str, *, archived: bool = False,
                  first: str | None = None) -> Path:
    base = codex_home()
    d = base / "archived_sessions" if archived else base / "sessions" / "2026" / "12" / "02"
    d.mkdir(parents=True, exist_ok=True)
    meta = {"timestamp": "2026-12-02T10:00:00.000Z", "type": "session_meta", "payload": {
        "id": session_id, "timestamp": "2026-12-02T10:00:00.000Z", "cwd": str(cwd),
        "originator": "codex_cli_rs", "cli_version": "0.125.0", "instructions": None,
        "source": "cli", "model_provider": "openai",
        "git": {"commit_hash": "0" * 40, "branch": "main"}}}
    turn = {"timestamp": "2026-12-02T10:00:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "fix it"}]}}
    path = d / f"rollout-2026-12-02T10-00-00-{session_id}.jsonl"
    head = first if first is not None else json.dumps(meta)
    path.write_text(head + "\n" + json.dumps(turn) + "\n")
    return path


def codex_compress(rollout: Path) -> Path:
    """What Codex's compression worker does to a rollout idle seven days: zstd into
    `<name>.zst` beside it, the mtime kept, the plain file removed."""
    import zstandard  # a dependency of git-ao where Python has no compression.zstd
    st = rollout.stat()
    out = rollout.with_name(rollout.name + ".zst")
    out.write_bytes(zstandard.ZstdCompressor().compress(rollout.read_bytes()))
    rollout.unlink()
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
    return out


def codex_worktree(repo: Path, hexid: str, *, thread: str | None, branch: str,
                   tmux: str | None = None, version: int = 1) -> Path:
    path = codex_home() / "worktrees" / hexid / repo.name
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "-q", "-b", branch, str(path), cwd=repo)
    admin = Path(git("rev-parse", "--path-format=absolute", "--git-dir", cwd=path).strip())
    meta = {"version": version, "manager": "codex-cli", "backend": "git", "source": "app",
            "location": "codexHome", "id": "1f2e3d4c5b6a7988", "name": branch,
            "slug": branch, "branch": branch, "repoId": "1f2e3d4c5b6a7988",
            "repoName": repo.name, "sourceRepoRoot": str(repo), "originalRelativeCwd": "",
            "worktreeGitRoot": str(path), "workspaceCwd": str(path),
            "createdAt": 1764669600, "updatedAt": 1764669600, "ownerThreadId": thread,
            "tmuxSession": tmux}
    (admin / "codex-worktree.json").write_text(json.dumps(meta, indent=2))
    owner = {"version": version, **({"ownerThreadId": thread} if thread else {})}
    (admin / "codex-thread.json").write_text(json.dumps(owner, indent=2))
    return path


def codex_sibling_worktree(repo: Path, branch: str, *, thread: str | None = None) -> Path:
    """`codex --worktree BRANCH`: `<repo>.<branch>` beside the repository, marked by
    codex-worktree.json (source cli, location sibling) and codex-thread.json in its
    admin dir."""
    path = repo.parent / f"{repo.name}.{branch.replace('/', '-')}"
    git("worktree", "add", "-q", "-b", branch, str(path), cwd=repo)
    admin = Path(git("rev-parse", "--path-format=absolute", "--git-dir", cwd=path).strip())
    (admin / "codex-worktree.json").write_text(json.dumps({
        "version": 1, "manager": "codex-cli", "backend": "git", "source": "cli",
        "location": "sibling", "id": "ab", "name": branch, "slug": branch, "branch": branch,
        "repoId": "ab", "repoName": repo.name, "sourceRepoRoot": str(repo),
        "originalRelativeCwd": "", "worktreeGitRoot": str(path), "workspaceCwd": str(path),
        "createdAt": 1, "updatedAt": 1, "ownerThreadId": thread, "tmuxSession": None},
        indent=2))
    owner = {"version": 1, **({"ownerThreadId": thread} if thread else {})}
    (admin / "codex-thread.json").write_text(json.dumps(owner, indent=2))
    return path


def conductor_workspace(repo: Path, name: str) -> Path:
    path = home() / "conductor" / "workspaces" / repo.name / name
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "-q", "-b", name, str(path), cwd=repo)
    return path


def conductor_legacy_workspace(repo: Path, name: str) -> Path:
    """A workspace as Conductor made it before 0.25.0: `<repo>/.conductor/<name>`."""
    path = repo / ".conductor" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "-q", "-b", name, str(path), cwd=repo)
    return path


def digests(root: Path) -> dict:
    """Every file under `root` (bytes and mtime), to show a tool's state untouched."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


def round_trip(repo, wt) -> None:
    """`git ao-preserve --all` takes the worktree `wt` away and `git ao-restore` brings
    it back exactly."""
    from tests.support import ao
    from tests.worktree_state import assert_restored, state
    before = state(wt)
    ao("ao-preserve", "--all", cwd=repo)
    assert not wt.exists()
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))
