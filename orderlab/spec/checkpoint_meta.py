"""What a checkpoint file says about itself, read without torch: `validate` fills a `kind: checkpoint` model from it,
and refuses a file whose tensors are not the ones its metadata describes before anything is loaded.

A checkpoint is a safetensors file (train/checkpoint.py writes and loads its tensors): 8 bytes of little-endian
header length, a JSON header giving each tensor's dtype, shape and byte range, then the tensors' bytes. The header's
`__metadata__` holds, under METADATA_KEY, a JSON object: the stack's shape, the encoding, the seed, the `train:`
block and the shapes of the encoding's trained tables. It is a stranger's file like any other: read through
core/userfiles.py (never blocking, bounded) into typed, bounded models, its byte layout checked against its size.
Whatever does not fit is one FileProblem line naming the file and the field. Must not import torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, Strict, model_validator

from orderlab.core.userfiles import FileModel, FileProblem, parse_json, read_head, validate_as
from orderlab.spec.fields import FfnMultiple, FloatType, LayerCount, Norm, Scale, Seed, Width
from orderlab.spec.train_block import TASKS, TrainSpec

METADATA_KEY = "orderlab"
METADATA = "orderlab metadata"  # how a line names the metadata, before the field at fault
HEADER = "safetensors header"
EXPECTED = "a checkpoint orderlab wrote (results/<name>/checkpoints/*.safetensors)"
MAX_HEADER_BYTES = 16 * 2**20  # a header lists every tensor's name and shape: under 1 MiB at the bounds' 1024 layers
BYTES_PER_VALUE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}  # the float types a checkpoint's tensors may have
LAYER_TENSORS = ("w_q", "w_k", "w_v", "w_o", "w_in", "w_out")  # each layer's, named as attention_stack.LayerWeights
EXAMPLES = 3  # names shown of each kind of mismatch

Count = Annotated[int, Strict(), Field(ge=0)]
Dimension = Annotated[int, Strict(), Field(ge=1, le=2**31)]


class StackShape(FileModel):
    """The trained stack's fields (as a spec's model would give them), each bounded as a spec's is."""

    model_config = ConfigDict(strict=True)
    d_model: Width
    n_heads: Width
    n_layers: LayerCount
    residual: bool
    norm: Norm
    ffn: bool
    ffn_mult: FfnMultiple
    causal: bool
    scale: Scale
    dtype: FloatType

    @model_validator(mode="after")
    def _heads_divide(self) -> StackShape:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}; expected a multiple")
        return self


class TrainedEncoding(FileModel):
    """The encoding the stack was trained with: a registry name (load.py checks it is one) and its parameters."""

    name: Annotated[str, Strict(), Field(min_length=1, max_length=200)]
    params: dict[str, Any] = Field(default_factory=dict)


class CheckpointMeta(FileModel):
    """Everything that rebuilds the stack around the tensors; train/checkpoint.py writes exactly these fields."""

    model: StackShape
    encoding: TrainedEncoding
    seed: Annotated[Seed, Strict()]
    train: TrainSpec
    tables: list[tuple[list[Dimension], Annotated[float, Strict(), Field(gt=0)]]] = Field(max_length=64)

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor's name and shape, as train/checkpoint.py saves them for this metadata."""
        d, n_layers = self.model.d_model, self.model.n_layers
        f = self.model.ffn_mult * d
        layer: dict[str, tuple[int, ...]] = {"w_q": (d, d), "w_k": (d, d), "w_v": (d, d), "w_o": (d, d)}
        layer |= {"w_in": (d, f), "w_out": (f, d)}
        classes = TASKS[self.train.task].classes(self.train.vocabulary)
        shapes = {f"layers.{i}.{name}": layer[name] for i in range(n_layers) for name in LAYER_TENSORS}
        shapes |= {f"tables.{i}": tuple(shape) for i, (shape, _) in enumerate(self.tables)}
        return shapes | {"head": (d, classes), "head_bias": (classes,)}


class TensorEntry(FileModel):
    """One tensor as the header lists it: dtype, shape, and its bytes' range after the header."""

    dtype: Literal["F64", "F32", "F16", "BF16"]
    shape: list[Count] = Field(max_length=8)
    data_offsets: tuple[Count, Count]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * BYTES_PER_VALUE[self.dtype]


class Header(FileModel):
    """The safetensors header: string metadata and every tensor's entry."""

    metadata: dict[str, str] = Field(default_factory=dict, alias="__metadata__")
    tensors: dict[str, TensorEntry]


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint file whose header, metadata and tensor list have been checked; its bytes not yet read."""

    path: Path
    meta: CheckpointMeta
    tensors: dict[str, TensorEntry]
    size: int  # bytes of the whole file: the most a loader needs to read


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint at `path`, checked without loading a tensor; FileProblem (one line) naming the field if not."""
    header, size = _read_header(path)
    meta = _read_metadata(path, header)
    _check_tensor_list(path, header.tensors, meta)
    return Checkpoint(path, meta, header.tensors, size)


def _read_header(path: Path) -> tuple[Header, int]:
    """The header, its byte ranges checked to tile the rest of the file exactly (a truncated file fails here)."""
    head, size = read_head(path, 8, EXPECTED)
    length = int.from_bytes(head, "little")
    if len(head) < 8 or not 2 <= length <= MAX_HEADER_BYTES:
        raise FileProblem(path, f"not a safetensors file (no header length in its first 8 bytes); expected {EXPECTED}")
    if 8 + length > size:
        raise FileProblem(path, f"{size:,} bytes, too few for its {length:,}-byte header (truncated); "
                          f"expected {EXPECTED}")  # fmt: skip
    raw, _ = read_head(path, 8 + length, EXPECTED)
    with _field_prefix(path, HEADER):
        try:
            text = raw[8:].decode("utf-8")
        except UnicodeDecodeError as error:
            raise FileProblem(path, f"not UTF-8 (byte {error.start}); expected a JSON object") from None
        data = parse_json(path, text, "a JSON object")
        if not isinstance(data, dict):
            raise FileProblem(path, f"a JSON {type(data).__name__}; expected a JSON object")
        header = validate_as(path, Header, {"__metadata__": data.pop("__metadata__", {}), "tensors": data},
                             "the safetensors header")  # fmt: skip
    _check_layout(path, header.tensors, size - 8 - length)
    return header, size


def _check_layout(path: Path, tensors: dict[str, TensorEntry], data_bytes: int) -> None:
    """Each tensor's byte range fits its shape and dtype, and the ranges tile the bytes after the header."""
    end = 0
    for name, entry in sorted(tensors.items(), key=lambda item: item[1].data_offsets):
        start, stop = entry.data_offsets
        if stop - start != entry.nbytes:
            raise FileProblem(path, f"bytes {start:,}..{stop:,} for {entry.nbytes:,} bytes of {entry.dtype} "
                              f"{entry.shape}; expected a range of its size", f"{HEADER}: {name}")  # fmt: skip
        if start != end:
            raise FileProblem(path, f"starts at byte {start:,}, where {end:,} was expected (a gap or overlap); "
                              "expected the tensors packed one after another", f"{HEADER}: {name}")  # fmt: skip
        end = stop
    if end != data_bytes:
        state = "truncated" if data_bytes < end else f"{data_bytes - end:,} bytes past the last tensor"
        raise FileProblem(path, f"{data_bytes:,} bytes of tensors where its header lists {end:,} ({state}); "
                          f"expected {EXPECTED}")  # fmt: skip


def _read_metadata(path: Path, header: Header) -> CheckpointMeta:
    text = header.metadata.get(METADATA_KEY)
    if text is None:
        raise FileProblem(path, f"a safetensors file without {METADATA}; expected {EXPECTED}")
    with _field_prefix(path, METADATA):
        return validate_as(path, CheckpointMeta, parse_json(path, text, "a JSON object"), "orderlab's metadata")


def _check_tensor_list(path: Path, tensors: dict[str, TensorEntry], meta: CheckpointMeta) -> None:
    """The file holds exactly the tensors its metadata describes, each of the shape it needs."""
    expected = meta.tensor_shapes()
    missing = [name for name in expected if name not in tensors]
    unexpected = [name for name in tensors if name not in expected]
    wrong = [f"{name} {tensors[name].shape} for {list(shape)}" for name, shape in expected.items()
             if name in tensors and tuple(tensors[name].shape) != shape]  # fmt: skip
    faults = [some(len(missing), "missing", missing), some(len(unexpected), "unexpected", unexpected),
              some(len(wrong), "of the wrong shape", wrong)]  # fmt: skip
    if any(faults):
        m = meta.model
        described = f"the {m.n_layers}-layer stack of d_model {m.d_model} its {METADATA} describes"
        raise FileProblem(path, f"{'; '.join(f for f in faults if f)}; expected the tensors of {described}", "tensors")


def some(count: int, what: str, names: list[str]) -> str:
    """'2 missing (a, b)', the first EXAMPLES names shown; '' for none."""
    if not count:
        return ""
    shown = ", ".join(names[:EXAMPLES]) + (", ..." if count > EXAMPLES else "")
    return f"{count} {what} ({shown})"


@contextmanager
def _field_prefix(path: Path, prefix: str) -> Iterator[None]:
    """A FileProblem raised inside names `prefix` before its field: `ckpt.safetensors: orderlab metadata: seed: ...`."""
    try:
        yield
    except FileProblem as problem:
        raise FileProblem(path, problem.detail, ": ".join(p for p in (prefix, problem.field) if p)) from None
