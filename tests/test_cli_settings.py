"""git ao config edits git-ao.toml in place: the user's comments, layout and keys
git-ao does not know stay as written, and unknown keys are warned about."""

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
