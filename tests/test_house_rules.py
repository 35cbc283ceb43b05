"""Project rules checked on every tracked file."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EM_DASH = "\u2014".encode()


def test_no_em_dash_in_any_tracked_text_file():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    offenders = []
    for rel in filter(None, out.split(b"\0")):
        path = ROOT / rel.decode()
        if path.is_file() and EM_DASH in path.read_bytes():
            offenders.append(rel.decode())
    assert offenders == []
