"""The typed records of what modules hand each other read and write the same bytes."""

import json

from git_ao.save.local_state import LocalState


def test_local_state_reads_and_writes_the_same_bytes():
    raw = {"sparse_checkout": "/*\n!/big/\n", "config_worktree": "[core]\n\tbare = false\n",
           "exact_flags": True, "assume_unchanged": ["a.txt"], "skip_worktree": ["big/"],
           "skip_worktree_absent": ["big/x"], "intent_to_add": ["new.txt"],
           "mode_base": {"dir": "0755", "exec": "0755", "file": "0644"},
           "modes": {"run.sh": "0700"}, "dir_modes": {".": "0700"}, "empty_dirs": ["e"],
           "submodules": ["lib"], "submodule_heads": {}, "submodule_branches": {"lib": "dev"},
           "recheckout": True, "worktree_refs": {"refs/worktree/x": "a" * 40},
           "a_key_from_a_newer_git_ao": [1, 2]}
    text = json.dumps(raw, sort_keys=True)
    state = LocalState.from_json(text)
    assert state.to_json() == text
    assert state.submodule_heads == {} and state.other == {"a_key_from_a_newer_git_ao": [1, 2]}
    assert state.keys() == set(raw)


def test_an_empty_local_state_is_no_json():
    assert LocalState.from_json(None).to_json() is None
    assert LocalState.from_json("{}").to_json() is None
    assert LocalState(recheckout=True).to_json() == '{"recheckout": true}'


def test_trash_meta_reads_and_writes_the_same_bytes(tmp_path):
    from git_ao.store import trash
    raw = {"commit": None, "common_dir": "/r/.git", "created_ns": 5, "killed": True,
           "path": "/w", "session": "s1", "walked_ns": 4, "written_by_a_newer_one": {"x": 1}}
    text = json.dumps(raw, sort_keys=True)
    (tmp_path / trash.META).write_text(text)
    entry = trash.load(str(tmp_path))
    assert entry.meta.killed and entry.meta.commit is None and entry.meta.has_commit
    trash.mark(entry)
    assert (tmp_path / trash.META).read_text() == text
    trash.mark(entry, restored=True)
    assert json.loads((tmp_path / trash.META).read_text()) == dict(raw, restored=True)


def test_a_stray_entry_records_no_commit(tmp_path):
    from git_ao.store import trash
    assert "commit" not in trash.Meta(stray=True, files=["a"]).to_dict()
    assert trash.Meta(commit=None, has_commit=True).to_dict() == {"commit": None}


def test_only_a_verified_worktree_goes_into_the_trash(tmp_path):
    import pytest

    from git_ao.store import trash
    victim = tmp_path / "not-a-worktree"
    victim.mkdir()
    (victim / "f").write_text("x")
    with pytest.raises(TypeError):
        trash.move_in(str(tmp_path / "data"), "s1", str(victim), trash.Meta())  # type: ignore[arg-type]
    assert (victim / "f").read_text() == "x"


def test_why_the_trash_is_not_used_is_a_value_not_words(tmp_path):
    from git_ao.restore import from_trash
    from git_ao.store.records import Save
    save = Save("s1", str(tmp_path / "repo.git"), str(tmp_path / "wt"), "main", None, False,
                "", None, None, 1)
    use = from_trash.usable(str(tmp_path / "data"), save)
    assert use.entry is None and use.skip is from_trash.Skip.NO_COPY and use.why
