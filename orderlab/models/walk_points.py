"""The hook points a causal LM's prefix walk (models/kv_prefix.py) reads: each requested point that a module forms,
read at every call of the walk by the dense pass's own forward hooks (models/hf/sites.py) on the call's one new token
per prefix, kept as the walk keeps its token states and gathered back to the dense pass's layout (B, T, ...).

Reads only: a point of one token is that token's whatever the prefix's cache, so every point a module forms per token
(q, k, v, attention and feed-forward outputs, mid, the block's output) is the dense pass's to round-off; attention
probabilities need whole rows and a write would change what later prefixes attend to, so both run dense
(models/pretrained.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from orderlab.core.hook_points import point_of, token_axes
from orderlab.models.hf.loader import PretrainedBackend
from orderlab.models.hf.sites import points_read
from orderlab.models.precision import widened
from orderlab.models.prefix_trie import gather_rows


class WalkPoints:
    """The named points read at each call of one walk, one row per prefix (the root's first), in call order."""

    def __init__(self, backend: PretrainedBackend, names: Sequence[str]):
        self.backend, self.names = backend, list(names)
        self.kept: dict[str, list[torch.Tensor]] = {}

    @contextmanager
    def call(self, rows: int, keep: int | None = None) -> Iterator[None]:
        """While open, one call of `rows` prefixes, one new token each, is read; its first `keep` rows are kept
        (None: all; the root's call runs a padded row tile and keeps one)."""
        formed: dict[str, torch.Tensor] = {}
        with points_read(self.backend.model, self.backend.code, self.names, (rows, 1), formed):
            yield
        for name, tensor in formed.items():  # the one token's slot dropped: (rows, ...)
            self.kept.setdefault(name, []).append(tensor.select(token_axes(point_of(name))[0], 0)[:keep])

    def gathered(self, rows: torch.Tensor, batch: int, slots: int) -> dict[str, torch.Tensor]:
        """Each point as the dense pass reads it: rows (batch * slots,) index the kept rows of every call stacked in
        order (the walk's state rows), each slot's put back on the point's token axis."""
        points = {}
        for name, calls in self.kept.items():
            states = torch.cat(calls)  # (all prefixes, ...)
            tokens = gather_rows(states.flatten(1), rows).view(batch, slots, *states.shape[1:])
            points[name] = widened(tokens.movedim(1, token_axes(point_of(name))[0]))
        return points
