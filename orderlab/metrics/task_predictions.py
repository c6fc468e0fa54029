"""A sequence-classification model's predictions on labelled examples under word shuffles, and the word-order
literature's metrics over them, named as published. Dataset inputs' own pass writes these rows
(measure/task_measure.py): per order the prediction, per example the published metric's value, and summary.csv the
mean over examples with a seeded bootstrap interval, overall, per gold label, per group and unweighted over groups.

A prediction whose logit margin lies within its round-off is a tie (measure/verdicts.ties): it is neither right nor
wrong, and is left out of every share below and of its count.
"""

from __future__ import annotations

from typing import Final

from orderlab.metrics.registry import PRETRAINED, metric

_PASS: Final = "dataset inputs (measure/task_measure.py)"
_ORDER: Final = "example × order (the original, then its shuffles)"
_EXAMPLE: Final = "example (summary.csv: mean over examples, bootstrap 95% interval)"
_SINHA: Final = "Sinha et al. 2021, *Unnatural Language Inference*"

PREDICTED_LABEL: Final = metric(
    "predicted_label", None, PRETRAINED, _ORDER,
    "the id of the label with the largest logit (column `predicted`: its name; verdict `tie` where the margin lies "
    "within the round-off)", computed_by=_PASS, reduction="none", passing=None,
).name  # fmt: skip
LABEL_MARGIN: Final = metric(
    "label_margin", None, PRETRAINED, _ORDER, "the largest logit minus the runner-up's: how decided the prediction is",
    computed_by=_PASS, reduction="none", passing=None,
).name  # fmt: skip
GOLD_PROBABILITY: Final = metric(
    "gold_probability", None, PRETRAINED, _ORDER, "softmax probability of the gold label (examples with a label)",
    computed_by=_PASS, reduction="none", passing=None,
).name  # fmt: skip
ACCURACY_ORIGINAL: Final = metric(
    "accuracy_original", None, PRETRAINED, _EXAMPLE,
    "1 when the prediction on the example as written is its gold label, else 0: the accuracy on originals",
    computed_by=_PASS, reduction="examples", passing=None,
).name  # fmt: skip
OMEGA_MAX: Final = metric(
    "omega_max", None, PRETRAINED, _EXAMPLE,
    f"1 when at least one shuffle is predicted as the gold label, else 0: Ω_max, the best accuracy over permutations "
    f"({_SINHA})", computed_by=_PASS, reduction="examples", passing=None,
).name  # fmt: skip
P_C: Final = metric(
    "p_c", None, PRETRAINED, _EXAMPLE,
    f"on an example predicted correctly as written, the share of its shuffles still predicted as the gold label: "
    f"P^c, permutation acceptance of correct predictions ({_SINHA})", computed_by=_PASS, reduction="examples",
    passing=None,
).name  # fmt: skip
P_F: Final = metric(
    "p_f", None, PRETRAINED, _EXAMPLE,
    f"on an example predicted wrongly as written, the share of its shuffles predicted as the gold label: P^f, "
    f"shuffles turning a wrong prediction right ({_SINHA})", computed_by=_PASS, reduction="examples", passing=None,
).name  # fmt: skip
CORRECT_SURVIVING: Final = metric(
    "correct_surviving", None, PRETRAINED, _EXAMPLE,
    "on an example predicted correctly as written, 1 when every shuffle is still predicted as the gold label, else "
    "0: the share of correct predictions surviving shuffling (Pham et al. 2021, *Out of Order*, with one shuffle per "
    "example)", computed_by=_PASS, reduction="examples", passing=None,
).name  # fmt: skip
FLIP_RATE: Final = metric(
    "flip_rate", None, PRETRAINED, _EXAMPLE,
    "the share of shuffles whose predicted label differs from the original's: the prediction flip rate (Gupta et "
    "al. 2021, *BERT & Family Eat Word Salad*)", computed_by=_PASS, reduction="examples", passing=None,
).name  # fmt: skip
PER_ORDER: Final = (PREDICTED_LABEL, LABEL_MARGIN, GOLD_PROBABILITY)
PER_EXAMPLE: Final = (ACCURACY_ORIGINAL, OMEGA_MAX, P_C, P_F, CORRECT_SURVIVING, FLIP_RATE)
