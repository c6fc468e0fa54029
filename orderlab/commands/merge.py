"""`orderlab merge`: the shards of `run --shard K/N` joined into the folder the whole run writes (results/merge.py)."""

from __future__ import annotations

from pathlib import Path

from orderlab.core.progress import SILENT, Phases
from orderlab.results.merge import merge_shards
from orderlab.results.outcome import Outcome


def merge(shards: list[Path], out: Path = Path("results"), force: bool = False, *, phases: Phases = SILENT) -> Outcome:
    """Merge the shard folders into OUT/<spec name>/; missing, repeated or mismatched shards refused first."""
    with phases.phase("merging", f"merging {len(shards)} shard folder(s)"):
        return merge_shards(shards, out, force)
