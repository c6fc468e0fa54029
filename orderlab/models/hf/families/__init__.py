"""The zoo's families in code: each builds a small seeded config and applies its position ablations.

One file per family (bert.py, gpt2.py, ...), each a `FamilyCode`; `FAMILY_CODE` maps a family name
(spec/families.FAMILIES, the torch-free table) to it. An ablation is a context manager around one
forward pass: it installs forward hooks or swaps a method on the model instance and undoes it on
exit, so loaded weights are never written (TransformerLens#157). transformers is imported lazily by
the caller (models/hf/loader.py) and handed in.
"""

from __future__ import annotations

from orderlab.models.hf.families.bert import BERT
from orderlab.models.hf.families.bloom import BLOOM
from orderlab.models.hf.families.deberta import DEBERTA
from orderlab.models.hf.families.family_code import FamilyCode
from orderlab.models.hf.families.gpt2 import GPT2
from orderlab.models.hf.families.llama import LLAMA
from orderlab.models.hf.families.t5 import T5

FAMILY_CODE: dict[str, FamilyCode] = {code.name: code for code in (BERT, GPT2, LLAMA, BLOOM, T5, DEBERTA)}

__all__ = ["FAMILY_CODE", "FamilyCode"]
