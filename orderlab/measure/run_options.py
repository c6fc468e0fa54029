"""How a run runs, as one object from the command line (or orderlab.api) down to the measuring loop.

The device is checked when the options are made, so a run asked for CUDA on a machine without it stops with one
line before any work, and nothing below checks again. chunk_size: sequences per forward pass (None: sized to the
memory free on the device, plan/chunks.orders_per_pass); force: a folder another command wrote may be replaced;
progress and notes: where the run reports (done, total) and what it is doing; model: a model object passed from
Python (orderlab.api.run(spec, model=...)), which the spec's model block describes; hooks: the user's functions at
hook points (run(spec, hooks={"2.output": fn})), which it records by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import torch

from orderlab.core.progress import Note, Progress
from orderlab.models.devices import CPU, validate_device
from orderlab.models.hf.given import UserModel
from orderlab.models.user_hooks import UserHook


@dataclass(frozen=True)
class RunOptions:
    device: torch.device = CPU
    chunk_size: int | None = None
    force: bool = False
    progress: Progress | None = None
    notes: Note | None = None
    model: UserModel | None = None
    hooks: Mapping[str, UserHook] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_device(self.device)

    def reporting(self, progress: Progress | None, notes: Note | None = None) -> RunOptions:
        """The same options, reporting to `progress` and `notes` (a command's bar, known once its phase starts)."""
        return replace(self, progress=progress, notes=notes)


DEFAULTS = RunOptions()  # on the CPU, chunks sized to memory, no folder replaced, nothing reported
