"""Training one attention stack on a synthetic task (tasks.py), and its task accuracy by sentence length.

Every encoding of a spec starts from the same seeded weights (the untrained stack's) and sees the same
batches; the word vectors stay the seeded ones, so a trained stack reads the same inputs as an untrained
one. What trains: every layer's projections and FFN, a read-out head, and the seeded tables of an encoding
that has them (learned, t5). Training runs in float32 on the CPU on one thread, so that it is bit for bit
the same for a seed on any machine of one CPU kind and torch version, whatever its core count. The stack is
orderlab/models/attention_stack.py's AttentionStack, built anew from the current parameters at every step. Measuring the
trained stack is the one measuring loop's job (orderlab/train/adapters.py); here only training and accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace

import torch
import torch.nn.functional as F

from orderlab.core.progress import Note, Progress
from orderlab.encodings import PositionalEncoding, build_encoding
from orderlab.encodings.encoding import TableKey
from orderlab.models.attention_stack import AttentionStack, LayerWeights
from orderlab.models.stack_builder import build_stack, layer_weights
from orderlab.spec.schema import EncodingChoice, Spec, encoding_context, longest_sentence
from orderlab.spec.train_block import TASKS as TASK_INFO
from orderlab.spec.train_block import TrainSpec
from orderlab.train.tasks import IGNORED, TASKS, Batch, TaskData, vocabulary_vectors

TRAIN_DTYPE = "float32"  # fast on the CPU; the trained weights are measured in the spec's dtype
WEIGHT_DECAY = 0.01


@dataclass(frozen=True)
class TrainedStack:
    """One encoding's stack after training: what the adapter measures and a checkpoint stores."""

    choice: EncodingChoice
    weights: list[LayerWeights]  # float64, the stack's
    tables: dict[TableKey, torch.Tensor]  # the encoding's trained tables (float64), by (shape, sigma)
    head: torch.Tensor  # (d, classes) float64: the read-out
    head_bias: torch.Tensor  # (classes,)
    losses: list[float]  # every step's training loss


def train_seed(spec: Spec) -> int:
    assert spec.train is not None
    return spec.seed if spec.train.seed is None else spec.train.seed


@contextmanager
def one_thread() -> Iterator[None]:
    """Run on one thread: a matmul's sums then do not depend on how many cores the machine has."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build_trained_encoding(spec: Spec, trained: TrainedStack, dtype: str, device: str = "cpu") -> PositionalEncoding:
    """The encoding built as the untrained stack's is, with its trained tables put in place of the seeded ones."""
    context = replace(encoding_context(spec, longest_sentence(spec)), dtype=dtype, device=device)
    encoding = build_encoding(trained.choice.name, context, trained.choice.params)
    torch_dtype = getattr(torch, dtype)
    encoding.tables().update({key: table.to(device=device, dtype=torch_dtype) for key, table in trained.tables.items()})
    return encoding


def train_stack(
    spec: Spec, choice: EncodingChoice, progress: Progress | None = None, note: Note | None = None
) -> TrainedStack:
    """Train the spec's stack under one encoding; deterministic for the spec (seeds) on one CPU kind.
    progress: (steps done, steps); note: the step and its loss."""
    train = spec.train
    assert train is not None, "a spec without train: has nothing to train"
    d_model, seed = spec.stack.d_model, train_seed(spec)
    with one_thread():
        data = TaskData(train, seed)
        vectors = vocabulary_vectors(train.vocabulary, spec.seed, d_model).float()  # (V, d)
        layers = [LayerWeights(*(w.float().requires_grad_() for w in _tensors(layer)))
                  for layer in layer_weights(spec)]  # fmt: skip
        context = replace(encoding_context(spec, longest_sentence(spec)), dtype=TRAIN_DTYPE)
        encoding = build_encoding(choice.name, context, choice.params)
        draw_tables(encoding, train)
        tables = {key: table.requires_grad_() for key, table in encoding.tables().items()}
        head, bias = _head(d_model, TASK_INFO[train.task].classes(train.vocabulary), seed)
        parameters = [w for layer in layers for w in _tensors(layer)] + list(tables.values()) + [head, bias]
        optimizer = torch.optim.AdamW(parameters, lr=train.lr, weight_decay=WEIGHT_DECAY)
        losses = []
        for step in range(1, train.steps + 1):
            batch = data.training_batch()
            # built anew each step: it may derive tensors from the parameters
            stack = build_stack(spec.stack, encoding, layers, dtype=TRAIN_DTYPE)
            loss = _loss(_logits(stack, vectors, batch.words, head, bias, train), batch)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
            optimizer.step()
            losses.append(loss.item())
            if progress:
                progress(step, train.steps)
            if note:
                note(f"step {step}/{train.steps}, loss {losses[-1]:.3f}")
    return TrainedStack(
        choice,
        [LayerWeights(*(w.detach().double() for w in _tensors(layer))) for layer in layers],
        {key: table.detach().double() for key, table in tables.items()},
        head.detach().double(),
        bias.detach().double(),
        losses,
    )


def task_accuracy(spec: Spec, trained: TrainedStack) -> dict[int, float]:
    """Accuracy on each test length's held-out sentences, through the trained stack in the spec's dtype."""
    train = spec.train
    assert train is not None
    stack = build_stack(spec.stack, build_trained_encoding(spec, trained, spec.stack.dtype), trained.weights)
    dtype = stack.dtype
    vectors = vocabulary_vectors(train.vocabulary, spec.seed, spec.stack.d_model).to(dtype)
    data = TaskData(train, train_seed(spec))
    accuracy = {}
    with torch.inference_mode(), one_thread():
        for n in range(train.tested[0], train.tested[1] + 1):
            batch = data.test_set(n)
            logits = _logits(stack, vectors, batch.words, trained.head.to(dtype), trained.head_bias.to(dtype), train)
            scored = batch.targets != IGNORED
            accuracy[n] = (logits.argmax(dim=-1) == batch.targets)[scored].double().mean().item()
    return accuracy


def _tensors(layer: LayerWeights) -> list[torch.Tensor]:
    return [getattr(layer, f.name) for f in fields(layer)]


def draw_tables(encoding: PositionalEncoding, train: TrainSpec) -> None:
    """Let the encoding draw its seeded tables (it does so on first use), so that they can train from step one."""
    n, context = train.longest, encoding.context
    encoding.input_offsets(n)
    q = torch.zeros(1, context.n_heads, n, context.d_head, dtype=getattr(torch, context.dtype))
    encoding.attention_bias(q, q)


def _head(d_model: int, classes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The read-out (d, classes), seeded N(0, 1/d), and a zero bias."""
    generator = torch.Generator().manual_seed(seed + 1)
    head = torch.randn(d_model, classes, generator=generator, dtype=torch.float64) / math.sqrt(d_model)
    return head.float().requires_grad_(), torch.zeros(classes).requires_grad_()


def _logits(
    stack: AttentionStack, vectors: torch.Tensor, words: torch.Tensor, head: torch.Tensor, bias: torch.Tensor,
    train: TrainSpec,
) -> torch.Tensor:  # fmt: skip
    """(B, classes), or (B, n, classes) per slot: the last layer's states, normalised, read out."""
    hidden = stack(vectors[words], attention_maps=False).hidden[-1]  # (B, n, d)
    hidden = F.layer_norm(hidden, hidden.shape[-1:])
    if not TASKS[train.task].per_slot:
        hidden = hidden.mean(dim=1)  # (B, d): blind to order unless position is in the states
    return hidden @ head + bias


def _loss(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, -2), batch.targets.flatten(), ignore_index=IGNORED)
