"""Scale-out: Dask workers that run a run's shards (workers.py); the partition itself is orderlab/plan/shards.py."""
