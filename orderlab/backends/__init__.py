"""Real pretrained transformers (optional extra `orderlab[hf]`): BERT-style models run through transformers.

Modules that are imported by `validate` (specs, extra, checks) must stay free of torch and
transformers; the ones that compute (pretrained, ablations, measure, corpus, experiment) import them.
"""
