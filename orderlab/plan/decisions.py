"""The choices a run makes about how it computes, each made once, when its measurement is set up, and recorded.

Whether a causal model's passes walk shared prefixes and whether the stack's dense passes are compiled change how
a run computes, never what it measures; the measuring adapters follow the record, and manifest.json reports it
rather than deciding again (the two once disagreed: the manifest re-priced a sweep as a whole, the adapters each
combination). A run decides for all its combinations at once, since the manifest describes the run as one.
A later choice of this kind (escalating rows a precision cannot resolve to a finer one, priced at its worst case
by the cost models) belongs here as another field, so that the manifest reads it the same way. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orderlab.errors import OrderlabError
from orderlab.plan.cost import run_seconds
from orderlab.plan.device import Device
from orderlab.plan.estimate import estimate
from orderlab.plan.prefix_walk import prefix_walk_pays
from orderlab.spec.schema import Spec

COMPILE_SETTINGS = ("auto", "always", "never")  # ORDERLAB_COMPILE's values
WALK_SETTINGS = ("auto", "always", "never")  # ORDERLAB_PREFIX_WALK's values
# ORDERLAB_CAPTURE's values: off, or the torch.compile backend of a causal LM's walk calls (eager: dynamo's graphs
# run as they are, for tests; inductor: fused kernels, fewer launches on a card)
CAPTURE_SETTINGS = ("off", "eager", "aot_eager", "inductor")
# The packed call holds as many tokens as a walk's call of that many prefixes, and a (T, T) mask and scores per head
MAX_PACKED_TOKENS = 4096
# On a GPU the walk's top depths are packed in one call by default: an H200 ran the 40,320-order 8-word GPT-2 run
# (two ablations) in 4.0 s packed against 5.1 s walked in float32, and no slower in bfloat16 (benchmarks/gpu_check.py)
GPU_PACKED_TOKENS = 512
COMPILE_AFTER_SECONDS = 300.0  # estimated (at rates.py's conservative rates); compiling took 10-60 s here


@dataclass(frozen=True)
class Decisions:
    """How a run computes, decided before its first pass."""

    share_prefixes: bool  # causal passes share prefixes where the model and encoding allow it; else dense
    compile: bool  # the stack's dense passes go through torch.compile
    # a causal LM's prefix walk runs its top depths as one packed call up to this many tokens (0: a call per depth);
    # the numbers equal the walk's to round-off, not bit for bit, so the CPU, whose baselines walk, packs on request
    packed_tokens: int = 0
    walk_forced: bool = False  # share_prefixes as ORDERLAB_PREFIX_WALK asked, not as the plan priced it
    # a causal LM's prefix walk runs each depth's call through torch.compile with this backend, in static shape
    # buckets ("": eager); its numbers are the walk's to the backend's round-off, so it runs on request only
    capture: str = ""


def decide(
    spec: Spec, spec_file: str | Path, device: Device | None, compile_setting: str, packed_setting: str = "0",
    walk_setting: str = "auto", capture_setting: str = "off",
) -> Decisions:  # fmt: skip
    """The run's decisions: prefixes shared as `walk_setting` asks (walks), compilation as `compile_setting` asks,
    top depths packed as `packed_setting` asks (packed_tokens), walk calls captured as `capture_setting` asks."""
    return Decisions(share_prefixes=walks(spec, spec_file, device, walk_setting),
                     compile=compile_pays(spec, compile_setting), packed_tokens=packed_tokens(packed_setting),
                     walk_forced=walk_setting != "auto", capture=capture_backend(capture_setting))  # fmt: skip


def walks(spec: Spec, spec_file: str | Path, device: Device | None, setting: str) -> bool:
    """Whether causal passes share prefixes where the model and encoding allow it: `setting` always or never (so that
    a card's walk and dense passes can be timed against each other), or auto: always on the CPU (None, where the
    committed baselines were measured walking), elsewhere where the plan prices the walk cheaper on `device`."""
    if setting not in WALK_SETTINGS:
        raise OrderlabError(f"ORDERLAB_PREFIX_WALK={setting!r}; expected one of {', '.join(WALK_SETTINGS)}")
    if setting != "auto":
        return setting == "always"
    return device is None or prefix_walk_pays(spec, spec_file, device)


def capture_backend(setting: str) -> str:
    """ORDERLAB_CAPTURE as a torch.compile backend ("": off)."""
    if setting not in CAPTURE_SETTINGS:
        raise OrderlabError(f"ORDERLAB_CAPTURE={setting!r}; expected one of {', '.join(CAPTURE_SETTINGS)}")
    return "" if setting == "off" else setting


def packed_tokens(setting: str) -> int:
    """ORDERLAB_PACKED_TOKENS as a token budget: a whole number from 0 (off) to MAX_PACKED_TOKENS."""
    if not setting.isdigit() or int(setting) > MAX_PACKED_TOKENS:
        raise OrderlabError(f"ORDERLAB_PACKED_TOKENS={setting!r}; expected a whole number of tokens from 0 (off) "
                            f"to {MAX_PACKED_TOKENS}")  # fmt: skip
    return int(setting)


def compile_pays(spec: Spec, setting: str) -> bool:
    """Whether dense passes go through torch.compile: `setting` always or never, or auto: when the run is estimated
    to take longer than COMPILE_AFTER_SECONDS, so that the compilation (5-60 s) pays for itself."""
    if setting not in COMPILE_SETTINGS:
        raise OrderlabError(f"ORDERLAB_COMPILE={setting!r}; expected one of {', '.join(COMPILE_SETTINGS)}")
    if setting != "auto":
        return setting == "always"
    return run_seconds(estimate(spec, Path("spec.yaml"))) > COMPILE_AFTER_SECONDS
