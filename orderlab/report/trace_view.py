"""`orderlab trace` in the terminal: one layer's attention step by step, every table fitted to the console width
(vectors wrap at their commas; a score matrix's key columns go on in a further table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from orderlab.report.fitting import Column, fitted_tables

if TYPE_CHECKING:
    import torch

    from orderlab.measure.trace import LayerTrace


def vector_text(values: list[float], decimals: int) -> str:
    """[1.0000, -0.5000] with a fixed number of decimals."""
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in values) + "]"


def trace_tables(trace: LayerTrace, width: int, decimals: int = 4) -> list[Table]:
    """Rich tables of a LayerTrace: per-token vectors, then per head Q/K/V and the score matrices."""
    title = f"layer {trace.layer}, encoding {trace.encoding}"
    inputs = [("token vector", trace.tokens), ("+ position", trace.position), ("layer input x", trace.x),
              ("LayerNorm(x)", trace.normed)]  # fmt: skip
    if trace.layer > 1:
        inputs = [("layer input x", trace.x), ("LayerNorm(x)", trace.normed)]
    tables = vector_tables(trace, f"{title}: input per token", inputs, width, decimals)
    for head in range(trace.weights.shape[0]):
        rotated = " (rotated by slot)" if trace.encoding.startswith("rope") else ""
        if trace.q is not None and trace.k is not None and trace.v is not None and trace.heads is not None:
            per_head = [(name, t[head]) for name, t in (("Q", trace.q), ("K", trace.k), ("V", trace.v),
                                                        ("weights @ V", trace.heads))]  # fmt: skip
            heading = f"{title}, head {head}: Q{rotated}, K{rotated}, V and head output"
            tables += vector_tables(trace, heading, per_head, width, decimals)
        for name, matrix in (("raw scores q·k", trace.raw), ("scaled scores", trace.scaled),
                             ("softmax weights", trace.weights)):  # fmt: skip
            if matrix is not None:  # a model of the zoo returns its probabilities only
                tables += score_tables(trace.words, f"head {head}: {name}", matrix[head], width, decimals)
    outputs = [("attention output (heads @ W_O)", trace.attended), ("layer output", trace.output)]
    return tables + vector_tables(trace, f"{title}: output per token", outputs, width, decimals)


def vector_tables(
    trace: LayerTrace, title: str, vectors: Sequence[tuple[str, torch.Tensor | None]], width: int, decimals: int
) -> list[Table]:
    """One row per token slot (slot, word), one wrapping column per vector shown (None: not traced)."""
    keys = [Column("slot", [str(i) for i in range(len(trace.words))]), Column("word", trace.words, justify="left")]
    values = [
        Column(name, [vector_text(t[i].tolist(), decimals) for i in range(len(trace.words))], justify="left", wrap=True)
        for name, t in vectors
        if t is not None
    ]
    return fitted_tables(title, None, keys, values, width)


def score_tables(words: list[str], title: str, matrix: torch.Tensor, width: int, decimals: int) -> list[Table]:
    """A head's query x key matrix: a row per query, a column per key, the keys going on in further tables."""
    rows = matrix.tolist()
    keys = [Column("query", [f"{i} {word}" for i, word in enumerate(words)], justify="left")]
    values = [Column(f"{j} {word}", [f"{row[j]:.{decimals}f}" for row in rows]) for j, word in enumerate(words)]
    return fitted_tables(title, "row: query, column: key", keys, values, width)
