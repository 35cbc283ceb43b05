"""The kernel's mount table, read from `/proc/self/mountinfo` (Linux): which
directories are mount points, on which mount a path lies, its file system type.
Where there is no such file every answer is empty, and callers fall back to
comparing devices. A bind mount of a directory of the same file system keeps
its `st_dev`, so only this table shows it, and a rename across it fails
(EXDEV) although the devices are equal."""

from __future__ import annotations

import os


def mount_points() -> set[str]:
    """Every mount point the kernel lists for this process (`/proc/self/mountinfo`),
    empty where there is no such file. A bind mount of a directory of the same file
    system keeps its `st_dev`, so only this table shows it."""
    return {point for point, _ in _mounts()}


def fs_type(path: str) -> str | None:
    """The type of the file system `path` lies on ('tmpfs', 'ext4'...); None where
    the table cannot be read."""
    found = _mount_above(path)
    return found[1] if found else None


def mount_of(path: str) -> str | None:
    """The mount point of the mount `path` lies on; None where the table cannot be
    read."""
    found = _mount_above(path)
    return found[0] if found else None


def _mount_above(path: str) -> tuple[str, str] | None:
    """(mount point, type) of the mount with the longest mount point above the real
    path of `path` (the later of two over the same point: the one seen)."""
    real = os.path.realpath(path)
    best: tuple[str, str] | None = None
    for point, kind in _mounts():
        if (real == point or real.startswith(point.rstrip("/") + "/")) and (
                best is None or len(point) >= len(best[0])):
            best = (point, kind)
    return best


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of `/proc/self/mountinfo`, in
    its order (a later mount over the same point comes later); [] without it."""
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    out = []
    for ln in lines:
        parts = ln.split(b" ")
        if len(parts) > 4:
            # Spaces, tabs, newlines and backslashes are written as \ooo.
            raw = parts[4]
            point = _unescaped(raw) if b"\\" in raw else raw
            # The optional fields end at a lone "-"; the type follows it.
            kind = parts[parts.index(b"-") + 1].decode(errors="replace") \
                if b"-" in parts[5:] and parts.index(b"-") + 1 < len(parts) else ""
            out.append((os.fsdecode(point), kind))
    return out


def _unescaped(raw: bytes) -> bytes:
    """A mount point as the kernel writes it, its \\ooo escapes read back."""
    decoded = bytearray()
    i = 0
    while i < len(raw):
        if raw[i:i + 1] == b"\\" and raw[i + 1:i + 4].isdigit():
            decoded.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            decoded.append(raw[i])
            i += 1
    return bytes(decoded)
