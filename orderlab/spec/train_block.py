"""The `train:` block of a stack spec: which synthetic task, on which sentence lengths, for how long. Torch-free.

The tasks themselves (their data and read-out) are orderlab/train/tasks.py's; here only what `validate`
needs: each task's name, the shortest sentence it can be posed on, whether it needs a causal stack and how many
classes its read-out has (a checkpoint's head is checked against it).
Must not import torch: spec/schema.py reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import Field, field_validator, model_validator

from orderlab.core import bounds
from orderlab.core.registry import did_you_mean
from orderlab.core.strict_model import StrictModel


@dataclass(frozen=True)
class TaskInfo:
    """What validation knows of a task."""

    shortest: int  # the fewest words a sentence of the task has
    causal_only: bool  # next_token: a bidirectional stack would see the answer
    doc: str
    answers: int | None = None  # how many classes the read-out chooses from; None: one per word of the vocabulary

    def classes(self, vocabulary: int) -> int:
        """The read-out's width: a checkpoint's `head` is (d_model, classes)."""
        return vocabulary if self.answers is None else self.answers


TASKS: Final[dict[str, TaskInfo]] = {
    "first_word": TaskInfo(2, False, "which word is at slot 0 (read out from the mean over slots)"),
    "copy": TaskInfo(1, False, "at every slot, the word at that slot"),
    "reverse": TaskInfo(2, False, "at slot i, the word at slot n-1-i"),
    "order_pair": TaskInfo(2, False, "does marker word a come before marker word b (mean over slots)", answers=2),
    "agent": TaskInfo(3, False, "'X verb Y' among filler nouns: which noun comes just before the verb (mean)"),
    "next_token": TaskInfo(3, True, "causal LM on a seeded toy grammar: each word follows from the two before it"),
}
MAX_STEPS = 10**7  # a million AdamW steps of even the smallest stack are hours; past ten million, a typo
MAX_BATCH = 2**16  # sentences per step; the step's activations are estimated against memory too


class TrainSpec(StrictModel):
    """Train one stack per encoding (and sweep combination) on a synthetic task, then measure it."""

    task: str = Field(description="first_word | copy | reverse | order_pair | agent | next_token (causal).")
    train_lengths: tuple[int, int] = Field(
        (4, 8), description="[shortest, longest] sentence length trained on (inclusive, drawn uniformly)."
    )
    test_lengths: tuple[int, int] | None = Field(
        None, description="[shortest, longest] lengths whose task accuracy is measured; train_lengths if omitted."
    )
    vocabulary: int = Field(16, ge=4, le=bounds.MAX_PROBE_VOCABULARY, description="Words word0..word{V-1}.")
    steps: int = Field(300, gt=0, le=MAX_STEPS, description="AdamW steps.")
    batch: int = Field(64, ge=1, le=MAX_BATCH, description="Sentences per step.")
    lr: float = Field(3e-3, gt=0, le=1, description="AdamW learning rate (weight decay 0.01).")
    seed: int | None = Field(
        None, ge=0, le=bounds.MAX_SEED, description="Seed of the training data; the spec's seed if omitted."
    )
    test_sentences: int = Field(
        256, ge=8, le=bounds.MAX_PROBE_SENTENCES, description="Held-out sentences per test length."
    )

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in TASKS:
            raise ValueError(f"unknown task {value!r}. {did_you_mean(value, list(TASKS))}")
        return value

    @field_validator("train_lengths", "test_lengths", mode="before")
    @classmethod
    def _range(cls, value: Any) -> Any:
        if value is not None and not (isinstance(value, list | tuple) and len(value) == 2):
            raise ValueError("expected [shortest, longest], e.g. [4, 8]")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TrainSpec:
        for name in ("train_lengths", "test_lengths"):
            lengths = getattr(self, name)
            if lengths is not None and not 1 <= lengths[0] <= lengths[1] <= bounds.MAX_PROBE_LENGTH:
                raise ValueError(
                    f"{name} {list(lengths)}: expected 1 <= shortest <= longest <= {bounds.MAX_PROBE_LENGTH}"
                )
        return self

    @property
    def tested(self) -> tuple[int, int]:
        return self.test_lengths or self.train_lengths

    @property
    def longest(self) -> int:
        """The longest sentence the trained stack sees, in training or testing."""
        return max(self.train_lengths[1], self.tested[1])
