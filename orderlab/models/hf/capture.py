"""A causal LM's prefix-walk calls captured by torch.compile, in static shape buckets (opt-in: ORDERLAB_CAPTURE).

On a GPU at 1,024 orders the walk is launch-bound: each depth is one call of a few hundred rows through every layer,
and the card waits on the host to launch its kernels (docs/performance.md). A compiled call fuses them into fewer
(inductor), but a compiled graph serves one shape: so each call's rows are padded to a bucket (a power of two of
row tiles: a handful of shapes per depth, reused by every chunk of a run) with copies of its first row, whose
results are dropped. Rows padded to whole row tiles do not change another
row's numbers (models/batching.py), so a walk in buckets gives the walk's numbers bit for bit under the `eager`
backend (tests/unit/models/test_walk_capture.py); a compiling backend's fused kernels, to round-off.

The whole model's forward is compiled: transformers' own hidden-state hooks trace there, but not inside a block,
where they read a ContextVar that dynamo cannot. The family's ablation hooks are entered around each walk, so the
compiled graphs are guarded on the module hooks (dynamo's default skips those guards and would replay the first
ablation's graph for every other). Where compilation fails (no compiler, an op dynamo cannot trace), the call runs
eager from then on, the run goes on, and `failure` says why (manifest.json's torch_compile). The graph is whole
(fullgraph): a failure comes before any of the call ran, so that the eager call starts from the same cache. Knows
nothing of the walk itself.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from orderlab.errors import failure_line

# Graphs a run may compile: per depth (the cache's length is part of the shape), per bucket, per hook layout and per
# logits kept or not: at 12 words, 13 depths x 10 buckets x 3 layouts x 2 = 780 at the very most
RECOMPILE_LIMIT = 1024


def bucket(rows: int, alignment: int) -> int:
    """Rows padded to a power of two of whole row tiles of `alignment` (at least one tile)."""
    tiles = max(1, -(-rows // alignment))
    return alignment * (1 << (tiles - 1).bit_length())


class Capture:
    """One model's walk calls through torch.compile with `backend` (its graphs kept for the whole run)."""

    def __init__(self, model: torch.nn.Module, backend: str):
        self.model, self.backend = model, backend
        self.compiled = torch.compile(model, backend=backend, dynamic=False, fullgraph=True)
        self.failure = ""  # why the calls fell back to eager, if they did
        self.first_call_seconds: float | None = None  # the first compiled call's wall time, compilation included
        self.calls = 0  # compiled calls run

    def __call__(self, **kwargs: Any) -> Any:
        """The model's output for these arguments: compiled, or eager once compiling has failed."""
        if self.failure:
            return self.model(**kwargs)
        started = time.perf_counter()
        try:
            with torch._dynamo.config.patch(skip_nnmodule_hook_guards=False, recompile_limit=RECOMPILE_LIMIT,
                                            accumulated_recompile_limit=RECOMPILE_LIMIT):  # fmt: skip
                out = self.compiled(**kwargs)
        except Exception as error:  # any compiler failure (no C compiler, an op it cannot trace): run eager
            self.failure = failure_line(error)
            return self.model(**kwargs)
        if self.first_call_seconds is None:
            self.first_call_seconds = time.perf_counter() - started
        self.calls += 1
        return out

    def record(self) -> dict[str, float | str]:
        """manifest.json's torch_compile entry: the backend and the compiled calls run, with the first one's seconds
        (compilation included; none where every depth was packed), or why the calls ran eager."""
        if self.failure:
            return {"capture": self.backend, "fallback": self.failure}
        first = {} if self.first_call_seconds is None else {"compile_seconds": round(self.first_call_seconds, 2)}
        return {"capture": self.backend, "calls": self.calls, **first}
