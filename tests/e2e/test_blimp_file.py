"""probes: {file: PATH}, a BLiMP-format JSONL file of minimal pairs: accuracy per phenomenon and per UID, their
unweighted means and the mean over pairs, equal to a direct computation of each sentence's log P with the same
seeded transformers model; and the shipped sample file is what docs/spec.md says it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
    pytest.mark.slow,
]

SAMPLE = Path(__file__).parents[2] / "experiments" / "data" / "blimp_sample.jsonl"


def log_p(model, tokenizer, sentence: str) -> float:
    """log P(sentence) = sum over its tokens of log P(token | the ones before it, from the start token)."""
    import torch

    ids = torch.tensor([tokenizer(sentence)["input_ids"]])  # (1, T), the start token first
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, :-1].double(), dim=-1)  # (T-1, V)
    return float(logprobs.gather(1, ids[0, 1:, None]).sum())


def test_per_phenomenon_accuracy_is_the_direct_computation(tmp_path: Path):
    import orderlab.api as ol
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    lines = SAMPLE.read_text().splitlines()[::2]  # half the shipped sample: 3 phenomena, 5 UIDs, half the passes
    (tmp_path / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    pairs = [json.loads(line) for line in lines]
    words = tuple(sorted({w for p in pairs for s in (p["sentence_good"], p["sentence_bad"]) for w in s.split()}))
    backend = PretrainedBackend(Seeded(16, 2, 1, words, 3), family="gpt2")
    model, tokenizer = backend.model.double(), backend.tokenizer
    spec = {"name": "blimp", "model": {"kind": "hf", "dtype": "float64", "position_embeddings": "trained"},
            "inputs": [{"sentence": pairs[0]["sentence_good"], "permutations": "identity"}],
            "probes": {"file": str(tmp_path / "pairs.jsonl")}, "metrics": ["minimal_pairs"]}  # fmt: skip
    summary = ol.run(spec, tmp_path / "out", model=model, tokenizer=tokenizer, progress=False).summary
    right = {id(p): log_p(model, tokenizer, p["sentence_good"]) > log_p(model, tokenizer, p["sentence_bad"])
             for p in pairs}  # fmt: skip
    seen = set()
    for key, column in (("phenomenon", "phenomenon"), ("UID", "uid")):
        groups = {p[key] for p in pairs}
        members = {group: [p for p in pairs if p[key] == group] for group in groups}
        rates = {group: sum(right[id(p)] for p in mine) / len(mine) for group, mine in members.items()}
        rows = summary[summary["case"] == column].set_index("subject")
        assert set(rows.index) == groups
        for group, rate in rates.items():
            assert rows.loc[group, "given"] == pytest.approx(rate)
            assert rows.loc[group, "permutations"] == len(members[group])
            seen.add(rate)
        noun = {"phenomenon": "phenomena", "UID": "UIDs"}[key]
        mean = summary.set_index("subject").loc[f"mean over {len(groups)} {noun}", "given"]
        assert mean == pytest.approx(sum(rates.values()) / len(rates))  # each group counts once
    overall = summary.set_index("subject").loc[f"all {len(pairs)} probes"]
    assert overall["given"] == pytest.approx(sum(right.values()) / len(pairs)) and overall["ties"] == 0
    assert len(seen) > 1  # the groups differ, so a rate taken from the wrong pairs would show


def test_the_shipped_sample_holds_twelve_pairs_over_three_phenomena_and_six_uids():
    from orderlab.core.minimal_pair_file import read_minimal_pairs

    pairs = read_minimal_pairs(SAMPLE)
    assert len(pairs) == 12 and len({p.phenomenon for p in pairs}) == 3 and len({p.uid for p in pairs}) == 6
