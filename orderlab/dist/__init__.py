"""Scale-out: shards of a run's units (shards.py) and Dask workers that run them (workers.py)."""
