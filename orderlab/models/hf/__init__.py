"""The model zoo through transformers (optional extra `orderlab[hf]`): loading, families, ablations."""
