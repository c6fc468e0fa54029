"""The metrics: one decorated function each, one file per family (a `metrics:` entry), registered in registry.py.

Adding a metric: a decorated function in its family's file (or a new file with its `family(...)` line, imported
below). The decorator's record is what the spec validates, the measuring loop computes (measure/
metric_computations.py), the run-size estimate counts and docs/metrics.md tabulates. Torch-free at import, like the
encodings: a metric's function imports its tensor maths (maths.py) when it runs, so `validate` never loads torch.
The import order below is the families' order (the spec's default `metrics:` list, the docs).
"""

from __future__ import annotations

from orderlab.metrics.registry import (
    BOTH,
    CAUSAL_POOLINGS,
    ENCODER_POOLINGS,
    METRIC_FAMILIES,
    METRICS,
    PRETRAINED,
    RATE_COUNT,
    RATE_TIES,
    STACK,
    STACK_POOLINGS,
    Compares,
    Computation,
    Keep,
    Metric,
    MetricFamily,
    Model,
    Needs,
    Passing,
    Pooling,
    Reduction,
    all_metrics,
    computed_on,
    declare_row_order,
    default_families,
    family,
    family_names,
    loop_rows,
    metric,
    metric_names,
    metrics_of,
    noise_families,
    per_permutation_mean,
    reads_logprobs,
    reads_states,
    reduction_of,
    row_metric,
    written_by,
)

# The built-in metrics, one file per family, in the families' order.
# isort: off
from orderlab.metrics.equivariance import EQUIVARIANCE, EQUIVARIANCE_FAMILY
from orderlab.metrics.invariance import (
    COSINE_CLS,
    COSINE_MEAN,
    INVARIANCE_CLS,
    INVARIANCE_FAMILY,
    INVARIANCE_FIRST,
    INVARIANCE_LAST,
    INVARIANCE_MAX,
    INVARIANCE_MEAN,
)
from orderlab.metrics.attention import ATTENTION_EQUIVARIANCE, ATTENTION_FAMILY
from orderlab.metrics.token_shift import TOKEN_SHIFT, TOKEN_SHIFT_FAMILY
from orderlab.metrics.pair_distance import PAIR_COSINE, PAIR_COSINE_CLS, PAIR_DISTANCE_FAMILY, PAIR_L2
from orderlab.metrics.prefix_invariance import PREFIX_INVARIANCE, PREFIX_INVARIANCE_FAMILY
from orderlab.metrics.repeated_words import REPEAT_COSINE, REPEAT_DISTANCE, REPEATED_WORDS_FAMILY
from orderlab.metrics.decodability import (
    DECODABILITY_FAMILY,
    POSITION_ACCURACY,
    POSITION_CHANCE,
    POSITION_SLOT_ACCURACY,
)
from orderlab.metrics.lm_logprob import (
    LM_LOGPROB_FAMILY,
    LOGPROB,
    LOGPROB_CHANGE,
    LOGPROB_DELTA,
    LOGPROB_REFERENCE,
    ORIGINAL_RANK,
    PERMUTATION_PREFERRED,
)
from orderlab.metrics.minimal_pairs import MINIMAL_PAIR_PREFERRED, MINIMAL_PAIRS_FAMILY
from orderlab.metrics.trained import TASK_ACCURACY
from orderlab.metrics.corpus import SIMILARITY_CLS, SIMILARITY_MEAN
from orderlab.metrics.task_predictions import (
    ACCURACY_ORIGINAL,
    CORRECT_SURVIVING,
    FLIP_RATE,
    GOLD_PROBABILITY,
    LABEL_MARGIN,
    OMEGA_MAX,
    P_C,
    P_F,
    PREDICTED_LABEL,
)
# isort: on

# The metrics' row order (metrics.csv, summary.csv, the terminal's tables, the docs), declared here rather than left
# to the imports above and the order in which stacked decorators register; grouped as registry._row_group groups
# rows, which also places a metric added from outside orderlab.
declare_row_order(
    # the default families' stack rows
    EQUIVARIANCE, INVARIANCE_MEAN, INVARIANCE_MAX, INVARIANCE_FIRST, INVARIANCE_LAST, ATTENTION_EQUIVARIANCE,
    TOKEN_SHIFT, PAIR_COSINE, PAIR_L2,
    # the other stack rows
    PREFIX_INVARIANCE, REPEAT_COSINE, REPEAT_DISTANCE,
    # the pretrained-only rows
    COSINE_CLS, COSINE_MEAN, INVARIANCE_CLS, PAIR_COSINE_CLS, LOGPROB_CHANGE, PERMUTATION_PREFERRED,
    MINIMAL_PAIR_PREFERRED,
    # the rows never summarised
    POSITION_ACCURACY, POSITION_CHANCE, POSITION_SLOT_ACCURACY, LOGPROB, LOGPROB_REFERENCE, LOGPROB_DELTA,
    ORIGINAL_RANK, TASK_ACCURACY, SIMILARITY_MEAN, SIMILARITY_CLS, PREDICTED_LABEL, LABEL_MARGIN, GOLD_PROBABILITY,
    ACCURACY_ORIGINAL, OMEGA_MAX, P_C, P_F, CORRECT_SURVIVING, FLIP_RATE,
)  # fmt: skip

__all__ = [
    "ATTENTION_EQUIVARIANCE", "ATTENTION_FAMILY", "BOTH", "CAUSAL_POOLINGS", "COSINE_CLS", "COSINE_MEAN",
    "DECODABILITY_FAMILY", "ENCODER_POOLINGS", "EQUIVARIANCE", "EQUIVARIANCE_FAMILY", "INVARIANCE_CLS",
    "INVARIANCE_FAMILY", "INVARIANCE_FIRST", "INVARIANCE_LAST", "INVARIANCE_MAX", "INVARIANCE_MEAN",
    "LM_LOGPROB_FAMILY", "LOGPROB", "LOGPROB_CHANGE", "LOGPROB_DELTA", "LOGPROB_REFERENCE", "METRICS",
    "METRIC_FAMILIES", "MINIMAL_PAIRS_FAMILY", "MINIMAL_PAIR_PREFERRED", "ORIGINAL_RANK", "PAIR_COSINE",
    "PAIR_COSINE_CLS", "PAIR_DISTANCE_FAMILY", "PAIR_L2", "PERMUTATION_PREFERRED", "POSITION_ACCURACY",
    "POSITION_CHANCE", "POSITION_SLOT_ACCURACY", "PREFIX_INVARIANCE", "PREFIX_INVARIANCE_FAMILY", "PRETRAINED",
    "RATE_COUNT", "RATE_TIES", "REPEATED_WORDS_FAMILY", "REPEAT_COSINE", "REPEAT_DISTANCE", "SIMILARITY_CLS",
    "SIMILARITY_MEAN", "STACK", "STACK_POOLINGS", "TASK_ACCURACY", "TOKEN_SHIFT", "TOKEN_SHIFT_FAMILY", "Compares",
    "Computation", "Keep", "Metric", "MetricFamily", "Model", "Needs", "Passing", "Pooling", "Reduction",
    "all_metrics", "computed_on", "default_families", "family", "family_names", "loop_rows", "metric", "metric_names",
    "metrics_of", "noise_families", "per_permutation_mean", "reads_logprobs", "reads_states", "reduction_of",
    "row_metric", "written_by",
]  # fmt: skip
