"""Hard bounds on the integer fields of a spec, one named constant each with its reason.

They hold on every machine and keep values out of torch and numpy calls that would reject them
with a traceback (torch.Generator takes seeds below 2**64; shapes overflow int64). What fits
these bounds but not this machine's memory, time or disk is refused by orderlab/plan/limits.py.
Must not import torch.
"""

from __future__ import annotations

# Every generator accepts it: torch.Generator takes up to 2**64 - 1, numpy's legacy RandomState only below 2**32.
MAX_SEED = 2**32 - 1
# 5x GPT-3's 12,288. One layer's weights at this width (ffn_mult 4) are 412 GB in float64.
MAX_D_MODEL = 2**16
# 10x the deepest common transformers (GPT-3: 96); every layer adds rows to every metric.
MAX_LAYERS = 1024
# Transformers use 4 (8/3 with gated units); the FFN's weights grow with it.
MAX_FFN_MULT = 64
# Random permutations are drawn, all kept for distinctness and sorted into CSV order (~300 B each at
# 13 words: 3 GB at this bound), and each is a forward pass (15-30 min at the 5-13k sequences/s measured).
MAX_RANDOM_PERMUTATIONS = 10**7
# The position probe keeps every layer's states of all its sentences (at the default length 8 and
# d_model 64: 410 MB per layer at this bound, in float64).
MAX_PROBE_SENTENCES = 100_000
# BERT-style models read at most 512 tokens; chance accuracy 1/length is 0.2% there.
MAX_PROBE_LENGTH = 512
# Each word's vector is hashed and drawn (~16 us each): 1.6 s at this bound; natural vocabularies are 30-50k.
MAX_PROBE_VOCABULARY = 100_000
# Corpus mode compares each sentence with at most this many shuffles (a sentence has at most n! - 1).
MAX_SHUFFLES = 10_000
# Sequences per forward pass of a pretrained model: 4,096 x 512 tokens x 384 wide is 3 GB of float32 a layer.
MAX_BATCH_SIZE = 4096

# attention_maps.permutations: each adds n^2 x heads x layers rows per encoding to attention.csv and a figure.
MAX_SHOWN_REORDERINGS = 16

# Labelled examples of a dataset input: a file's rows, or those typed into a spec.
MAX_EXAMPLES = 1_000_000
# Bootstrap resamples behind a task metric's interval.
MAX_RESAMPLES = 100_000
# Labels of a classification head.
MAX_LABELS = 10_000
