"""How much memory a run may still take: the least of what the machine has available, the room left under the
process's address-space limit (`ulimit -v`, RLIMIT_AS) and the room left under its cgroup's memory limit (a
container's, or systemd's MemoryMax). A plan sized from /proc/meminfo alone accepted runs that then died in a
torch allocation under such a limit. Torch-free, as all of plan/.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Address space that importing torch maps before a run allocates anything (0.63 GB for the CPU build, measured by
# /proc/self/status's VmSize); `validate --plan` has not imported it, the run will.
TORCH_ADDRESS_SPACE = 10**9
CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
UNLIMITED = 2**62  # cgroup v1 writes 'no limit' as a page-rounded 2**63 - 1


@dataclass(frozen=True)
class Room:
    """Bytes a run may still allocate, and the phrase that says where the bound comes from."""

    amount: int
    source: str  # 'this machine has', 'the address-space limit (ulimit -v) leaves', ...


def memory_room() -> Room:
    """The tightest of the machine's available memory, the address-space limit and the cgroup limit."""
    rooms = [Room(machine_available(), "this machine has")]
    address = address_space_room()
    if address is not None:
        rooms.append(Room(address, "the address-space limit (ulimit -v) leaves"))
    cgroup = cgroup_room()
    if cgroup is not None:
        rooms.append(Room(cgroup, "the cgroup memory limit leaves"))
    return min(rooms, key=lambda room: room.amount)


def machine_available() -> int:
    """Bytes of memory available now (MemAvailable on Linux; all physical memory elsewhere)."""
    found = _fields(Path("/proc/meminfo"), ("MemAvailable",))
    if "MemAvailable" in found:
        return found["MemAvailable"] * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def address_space_room() -> int | None:
    """Bytes left under RLIMIT_AS (the soft limit) beyond what this process maps now and torch will map; None if
    there is no such limit (or no way to read it: Windows)."""
    try:
        import resource
    except ImportError:
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    mapped = _fields(Path("/proc/self/status"), ("VmSize",)).get("VmSize", 0) * 1024
    torch_to_come = 0 if "torch" in sys.modules else TORCH_ADDRESS_SPACE
    return max(0, limit - mapped - torch_to_come)


def cgroup_room(root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> int | None:
    """Bytes left under the memory limit of this process's cgroup or of any cgroup above it (v2: memory.max less
    memory.current; v1: memory.limit_in_bytes less memory.usage_in_bytes), page cache it may drop counted as room;
    None if no limit is set or none can be read."""
    rooms = []
    for folder, limit_file, usage_file in _cgroup_folders(root, self_cgroup):
        limit, usage = _number(folder / limit_file), _number(folder / usage_file)
        if limit is None or usage is None or limit >= UNLIMITED:
            continue
        stat = _fields(folder / "memory.stat", ("inactive_file", "total_inactive_file"))
        reclaimable = stat.get("total_inactive_file", stat.get("inactive_file", 0))
        rooms.append(max(0, limit - usage + min(reclaimable, usage)))
    return min(rooms) if rooms else None


def _cgroup_folders(root: Path, self_cgroup: Path) -> list[tuple[Path, str, str]]:
    """The folders of this process's memory cgroup and of every cgroup above it, with the names of their files."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        if hierarchy == "0" and not controllers:
            base, files = root, ("memory.max", "memory.current")  # v2: one unified tree
        elif "memory" in controllers.split(","):
            base, files = root / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        parts = [part for part in path.split("/") if part not in ("", ".", "..")]
        # Inside a container the cgroup's own folder is often mounted as the root: the root's files count too.
        found += [(base.joinpath(*parts[:depth]), *files) for depth in range(len(parts), -1, -1)]
    return found


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return UNLIMITED
    return int(text) if text.isdigit() else None


def _fields(path: Path, names: tuple[str, ...]) -> dict[str, int]:
    """`name: number` (or `name number`) lines of a /proc or cgroup file, for the names asked; {} if unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    found = {}
    for name in names:
        match = re.search(rf"^{name}:?\s+(\d+)", text, re.M)
        if match:
            found[name] = int(match.group(1))
    return found
