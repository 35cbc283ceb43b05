"""git-ao.toml: read with tomllib, edited in place with tomlkit by git ao config."""

import json
import os
import stat
import tomllib

from tests.support import ao
from tests.trash_helpers import checkout_path_only


def test_set_get_unset_list_round_trip(repo, ao_env):
    toml = ao_env / "aodata" / "git-ao.toml"
    ao("ao", "config", "set", "preserve.jobs", "3", cwd=repo)
    ao("ao", "config", "set", "relaunch.harness.claude-code",
       "tmux new-session -d 'claude --resume {agent_session_id}'", cwd=repo)
    ao("ao", "config", "set", "preserve.timeout", "2.5", cwd=repo)
    doc = tomllib.loads(toml.read_text())
    assert doc == {"preserve": {"jobs": 3, "timeout": 2.5},
                   "relaunch": {"harness": {"claude-code":
                                            "tmux new-session -d 'claude --resume "
                                            "{agent_session_id}'"}}}
    assert stat.S_IMODE(os.stat(toml).st_mode) == 0o600
    assert ao("ao", "config", "get", "preserve.jobs", cwd=repo).stdout == "3\n"
    assert ao("ao", "config", "list", cwd=repo).stdout.splitlines() == [
        "preserve.jobs=3", "preserve.timeout=2.5",
        "relaunch.harness.claude-code=tmux new-session -d 'claude --resume {agent_session_id}'"]
    ao("ao", "config", "unset", "preserve.timeout", cwd=repo)
    ao("ao", "config", "unset", "preserve.timeout", cwd=repo, rc=1)
    ao("ao", "config", "get", "preserve.timeout", cwd=repo, rc=1)
    ao("ao", "config", "set", "-n", "preserve.jobs", "9", cwd=repo)
    assert tomllib.loads(toml.read_text())["preserve"] == {"jobs": 3}
    listed = ao("ao", "config", "list", "--all", cwd=repo).stdout
    assert "# relaunch.command: " in listed and "# prune.expire: " in listed


def test_bad_values_refused_naming_the_key(repo, ao_env):
    for key, value in [("preserve.jobs", "many"), ("preserve.jobs", "0"),
                       ("preserve.timeout", "-1"), ("relaunch.command", "'unclosed"),
                       ("relaunch.command", ""), ("relaunch.timeout", "soon"),
                       ("preserve.timeout", "nan"), ("relaunch.timeout", "inf"),
                       ("prune.expire", "garbage"), ("preserve.timeout", "0")]:
        for dry in ([], ["-n"]):
            res = ao("ao", "config", "set", *dry, "--", key, value, cwd=repo, rc=129)
            assert res.stderr.startswith(f"error: bad value for '{key}': "), res.stderr
    res = ao("ao", "config", "set", "preserve.jbos", "2", cwd=repo, rc=129)
    assert "unknown key 'preserve.jbos'" in res.stderr
    assert not (ao_env / "aodata" / "git-ao.toml").exists()


def test_a_date_git_cannot_parse_in_the_file_is_ignored_by_prune(repo, ao_env):
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    (data / "git-ao.toml").write_text('[prune]\nexpire = "garbage"\n')
    res = ao("ao-prune", cwd=repo)
    assert "warning: prune.expire ignored: malformed expiration date 'garbage'" in res.stderr
    ao("ao", "config", "set", "prune.expire", "2.weeks.ago", cwd=repo)
    assert "warning" not in ao("ao-prune", cwd=repo).stderr


def test_unknown_keys_and_bad_values_in_the_file_are_warned_about(repo, ao_env):
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    (data / "git-ao.toml").write_text(
        '[preserve]\njobs = "lots"\ntimeout = 5\ncolour = true\n[relaunch]\n'
        'command = ["echo", "hi"]\n[surprise]\nx = 1\n')
    res = ao("ao", "config", "list", "--json", cwd=repo)
    assert json.loads(res.stdout)["values"] == {"preserve.timeout": 5,
                                                "relaunch.command": ["echo", "hi"]}
    warnings = res.stderr.splitlines()
    assert any("bad value for 'preserve.jobs'" in w for w in warnings)
    assert any("unknown key 'preserve.colour'" in w for w in warnings)
    assert any("unknown key 'surprise.x'" in w for w in warnings)
    assert all(w.startswith("warning: ") for w in warnings)
    # set keeps what it does not know
    ao("ao", "config", "set", "preserve.jobs", "2", cwd=repo)
    doc = tomllib.loads((data / "git-ao.toml").read_text())
    assert doc["surprise"] == {"x": 1} and doc["preserve"]["jobs"] == 2


def test_config_defaults_feed_the_commands(repo, worktrees):
    wt = worktrees(repo, "cfg")
    (wt / "f.txt").write_text("x\n")
    ao("ao-preserve", "cfg", cwd=repo)
    checkout_path_only()  # so the entry outlives the restore
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    ao("ao-restore", cwd=repo)
    ao("ao", "config", "set", "prune.expire", "never", cwd=repo)
    ao("ao-prune", cwd=repo)
    assert os.listdir(trash)  # prune.expire=never: nothing is old enough
    ao("ao-prune", "--expire", "now", cwd=repo)  # the option wins over the setting
    assert not os.listdir(trash)
    ao("ao", "config", "set", "preserve.timeout", "3600", cwd=repo)
    ao("ao-preserve", "--all", cwd=repo)


def test_unreadable_config_never_stops_a_preserve(repo, worktrees):
    # A syntax error in git-ao.toml is a warning: shutdown still saves every session,
    # doctor reports the file, and config set refuses to overwrite it.
    wt = worktrees(repo, "typo")
    (wt / "f").write_text("x")
    cfg = os.path.join(os.environ["AO_DATA_DIR"], "git-ao.toml")
    with open(cfg, "w") as fh:
        fh.write("preserve.jobs 4\n")
    res = ao("ao-preserve", "--all", cwd=repo)
    assert "warning: cannot read" in res.stderr
    assert not wt.exists()
    res = ao("ao", "doctor", cwd=repo, rc=1)
    assert "config" in res.stdout and "cannot read" in res.stdout
    ao("ao", "config", "set", "preserve.jobs", "2", cwd=repo, rc=128)
    with open(cfg) as fh:
        assert fh.read() == "preserve.jobs 4\n"
    ao("ao-restore", cwd=repo)
