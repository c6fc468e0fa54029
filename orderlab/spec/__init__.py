"""The spec layer, torch-free so `orderlab validate` answers fast: models, loading, sweeps, names."""
