"""git ao config edits git-ao.toml in place: the user's comments, layout and keys
git-ao does not know stay as written, and unknown keys are warned about."""

import json
import tomllib

from tests.conftest import ao

HAND_WRITTEN = """\
# Written by hand: keep this comment.
[preserve]
jobs = 4  # four at a time
colour = "blue"

[team]
owner = "ada"  # not a git-ao key
"""


def test_config_set_keeps_comments_and_unknown_keys_and_warns(repo, ao_env):
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    path = data / "git-ao.toml"
    path.write_text(HAND_WRITTEN)
    res = ao("ao", "config", "set", "preserve.timeout", "30", cwd=repo)
    text = path.read_text()
    assert "# Written by hand: keep this comment." in text
    assert "jobs = 4  # four at a time" in text
    assert 'owner = "ada"  # not a git-ao key' in text
    assert tomllib.loads(text)["preserve"] == {"jobs": 4, "colour": "blue", "timeout": 30}
    assert "warning: unknown key 'preserve.colour'" in res.stderr
    assert "warning: unknown key 'team.owner'" in res.stderr
    ao("ao", "config", "unset", "preserve.timeout", cwd=repo)
    assert path.read_text() == HAND_WRITTEN


def test_config_set_a_harness_name_with_a_dot_stays_one_key(repo, ao_env):
    ao("ao", "config", "set", "relaunch.harness.claude.code", "tmux new -d", cwd=repo)
    doc = tomllib.loads((ao_env / "aodata" / "git-ao.toml").read_text())
    assert doc["relaunch"]["harness"] == {"claude.code": "tmux new -d"}
    res = ao("ao", "config", "get", "relaunch.harness.claude.code", cwd=repo)
    assert res.stdout == "tmux new -d\n"


def test_config_set_add_appends_to_a_key_taking_several(repo, ao_env):
    """As `git config --add`: restore.mapPath takes one mapping per --add; set
    without it replaces them; a key taking one value refuses --add."""
    ao("ao", "config", "set", "restore.mapPath", "/home/alice=/home/bob", cwd=repo)
    ao("ao", "config", "set", "--add", "restore.mapPath", "/srv/a=/srv/b", cwd=repo)
    ao("ao", "config", "set", "--add", "restore.mapPath", "/srv/a=/srv/b", cwd=repo)  # once
    res = ao("ao", "config", "get", "restore.mapPath", cwd=repo)
    assert res.stdout == '["/home/alice=/home/bob", "/srv/a=/srv/b"]\n'
    doc = tomllib.loads((ao_env / "aodata" / "git-ao.toml").read_text())
    assert doc["restore"]["mapPath"] == ["/home/alice=/home/bob", "/srv/a=/srv/b"]
    res = ao("ao", "config", "set", "--add", "-n", "restore.mapPath", "/x=/y", "--json",
             cwd=repo)
    assert json.loads(res.stdout)["value"][-1] == "/x=/y"
    assert len(tomllib.loads((ao_env / "aodata" / "git-ao.toml").read_text())
               ["restore"]["mapPath"]) == 2
    res = ao("ao", "config", "set", "--add", "restore.mapPath", "nonsense", cwd=repo, rc=129)
    assert res.stderr.startswith("error: bad value for 'restore.mapPath'")
    res = ao("ao", "config", "set", "--add", "prune.expire", "now", cwd=repo, rc=129)
    assert res.stderr == ("error: 'prune.expire' takes one value; --add is for keys taking "
                          "several, such as restore.mapPath\n")
    ao("ao", "config", "set", "restore.mapPath", "/p=/q", cwd=repo)
    assert ao("ao", "config", "get", "restore.mapPath", cwd=repo).stdout == "/p=/q\n"
