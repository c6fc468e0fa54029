"""This machine's budgets and measured rates: what the cost models (stack_cost.py, pretrained_cost.py) price a run at.

Rates are conservative (a loaded machine's), so runs finish sooner than planned; a device's own measured rates
(plan/device.py) replace the matmul rates where `validate --plan` has them. Pure numbers, torch-free.
"""

from __future__ import annotations

# Python, torch and pandas once imported: 262 MB of a run's measured peak RSS (README), rounded up.
BASE_BYTES = 300 * 10**6
# A run may plan on this share of the memory available when it is validated: the rest is for the OS,
# the other processes of a shared machine and the allocator's slack.
MEMORY_SHARE = 0.8
# The stack's matmul FLOP/s, conservative: the runner measured 89-163 GFLOP/s (float32) and 35-70
# (float64) on a quiet 2-core machine (shared/PERFORMANCE.md), 15 for both while other sessions ran.
FLOPS_PER_SECOND = {"float32": 15e9, "float64": 8e9, "bfloat16": 15e9, "float16": 15e9}  # 16-bit: float32's, not more
# A transformers forward's matmuls: measured 310 GFLOP/s at BERT-base shape in batches of 256 sequences of 9 tokens,
# and about 250 for MiniLM in corpus mode (batches of 64), on a quiet 2-core machine (2 threads; about a core's FMA
# peak); taken lower, for busier or older machines. A plan within 2x of the measured time (benchmarks/bench_zoo.py).
PRETRAINED_FLOPS_PER_SECOND = 200e9
# Word pieces per white-space word, rounded up (MiniLM: "dog bites man" is 3 pieces, long words 2-4); a seeded zoo
# model's tokenizer is word-level: one token a word.
TOKENS_PER_WORD = 1.5
# Work per sequence beside the matmuls (gather, metrics, reductions): 47 us measured on a tiny stack.
SECONDS_PER_SEQUENCE = 60e-6
# Collecting, sorting and formatting one tidy CSV row: 9 us measured (524k rows, loaded machine).
SECONDS_PER_ROW = 12e-6
# Training (train/train.py): float32 on one thread, small matmuls with their backward passes; an AdamW step's
# own work (optimizer, data, autograd bookkeeping) on top. Conservative: the d_model 32 first_word spec measured
# ~2.5 GFLOP/s and ~4 ms a step on this loaded 2-core machine.
TRAINING_FLOPS_PER_SECOND = 2e9
SECONDS_PER_STEP = 5e-3
# Drawing one seeded weight (torch.randn, float64): 28 ns measured.
SECONDS_PER_WEIGHT = 40e-9
# Hashing a word into its seeded vector: 16 us measured at d_model 64 (plus drawing its numbers).
SECONDS_PER_WORD = 30e-6
# Drawing one random permutation (numpy), checking it is new and keeping it.
SECONDS_PER_DRAW = 5e-6
# Starting a run from the command line: importing torch, pandas and orderlab (1.7 s measured on a quiet 2-core machine),
# and the command line's own typer, rich and terminal modules: 2.9-3.4 s of CPU for both against 2.0 for the former
# alone, side by side on the busy machine (load 7-8). The zoo's quiet figures agree: a fresh `orderlab run` took 7.1 s
# more than the same run in a warm process (benchmarks/results.json, zoo, 7 words), transformers' import (below) and
# matplotlib's (no longer imported without --plot) included.
START_SECONDS = 3.0
# A zoo or packaged model: importing transformers, once a run, then per model its weights, drawn
# (seeded: each weight kept drawn once, the draws a later one overwrites skipped: models/kept_draws.py) or read from a
# folder, and copied into the round-off twin where it runs more than one pass
# (models/hf/loader.PretrainedBackend.reading); its tokenizer and config. The zoo's quiet figures gave 1.9 s (BERT)
# and 2.4 s (GPT-2) of a warm run beside its measuring loop at 86 M weights while every draw was drawn; drawing only
# the kept ones saves 0.3-1.1 s of that: about 17 ns a weight (sharing them over two threads saves 0.2-0.4 s more,
# within a fresh run's spread: benchmarks/results.json, seeded_build). transformers' import (its modeling modules pull
# in torch.distributed.tensor, dynamo, sympy and scipy) took 2.5 s on the AMD EPYC and 5.4-6.9 s on the Intel Xeon:
# at 5.0 s the plan reads 0.67-1.43 of every fresh zoo run recorded on either, float32 and bfloat16
# (docs/performance.md).
TRANSFORMERS_IMPORT_SECONDS = 5.0
SECONDS_PER_MODEL_WEIGHT = 17e-9
MODEL_BUILD_SECONDS = 0.2
# A materialised permutation of n tokens (tuple, set entry, sort label): 325 B measured at n = 13, 5 kB at n = 300.
PERMUTATION_BYTES, PERMUTATION_BYTES_PER_TOKEN = 200, 16
# A tidy row while its chunk is collected, sorted and formatted (Python lists, then a pandas frame).
ROW_MEMORY_BYTES = 400
# A row of attention.csv, built whole in memory (numeric columns, the concatenated copy, formatting).
ATTENTION_ROW_MEMORY_BYTES = 200
# A metrics.csv row without its text columns (case, layer, head, metric, value, verdict, commas): 62-66 B measured.
ROW_FIXED_BYTES = 66
PROBE_COLUMN_BYTES = len(",16,15,6.250000e-02")  # a probe row's length, slot and chance columns
# A corpus-mode metrics.csv row without its permutation and encoding (sentence id, words, shuffle, metric, value).
CORPUS_ROW_FIXED_BYTES = 45
# A dataset-inputs metrics.csv row without its words and encoding (example, label, group, permutation labels, metric,
# value, predicted label, verdict): counted on the seeded NLI test's rows.
TASK_ROW_FIXED_BYTES = 80
# ... and per word of the example: written as given and as permuted (~3 characters a word each), its slot in the
# permutation columns (~2 each): ~8 bytes, counted on the same rows.
TASK_ROW_BYTES_PER_WORD = 8
# An attention.csv row without its encoding and swept columns (layer, head, slots, value, commas), and without
# the digits of its reordering's number.
ATTENTION_ROW_FIXED_BYTES = 21

WEIGHT_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}
WIDEN_NUMBERS = 64 * 2**20  # models/precision.WIDEN_NUMBERS: a 16-bit model's twin widens at most this many at once


def itemsize(dtype: str) -> int:
    """A dtype's element size in bytes: what prices it (memory, and the chunks that fill it)."""
    return {"float64": 8, "float16": 2, "bfloat16": 2}.get(dtype, 4)
