"""`orderlab run --workers N` / `--scheduler ADDRESS`: a run's shards as Dask tasks, merged here into its folder.

Each task runs one shard (experiment.write_shard: the one measuring loop, restricted to the shard's
units) in a private temporary folder on its worker and returns the folder's files as bytes, so workers
share no file system with this machine; they need the spec at the same path and the same orderlab.
Here the shards land in a staging folder beside the destination and are merged (merge.merge_into);
the staging folder is removed whatever happens, and the results folder is written whole or not at all.
Dask retries a task that raises (RETRIES) and reschedules one whose worker died. Workers use this
process's torch thread count, so their numbers, and the manifest, are those of a run here.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from orderlab.errors import OrderlabError
from orderlab.commands.run import write_shard
from orderlab.spec.load import LoadedSpec, load_spec
from orderlab.results.merge import complete, merge_into, read_shard
from orderlab.results.outcome import Outcome
from orderlab.results.ownership import Writer, claim
from orderlab.dist.shards import DECODABILITY, require_shardable, shard_folder_name, work

RETRIES = 2  # runs of a task that raised, after the first; a dead worker's task is rescheduled by Dask itself
EXTRA = "--workers and --scheduler need Dask; expected it installed: pip install 'orderlab[dist]'"


def import_distributed() -> ModuleType:
    """dask.distributed, or one line saying how to get it."""
    try:
        import distributed  # lazy: an optional extra ([dist]) and a second-long import that only these options need
    except ImportError:
        raise OrderlabError(EXTRA) from None
    return distributed


def run_on_dask(
    loaded: LoadedSpec,
    device: torch.device,
    out: Path,
    cluster: int | str,
    progress: Callable[[int, int], None] | None = None,
    chunk_size: int | None = None,
    force: bool = False,
) -> Outcome:
    """Run the spec as shards on a local cluster of `cluster` processes (an int) or at a scheduler's address (a
    string), one shard per worker, and merge them into OUT/<spec name>/ as a whole run would write it."""
    distributed = import_distributed()
    started = time.perf_counter()
    spec = loaded.spec
    require_shardable(spec, loaded.path)
    folder = out / spec.name
    with claim(folder, Writer("run", spec.name), force), connect(distributed, cluster) as client:
        count = cluster if isinstance(cluster, int) else max(1, len(client.scheduler_info()["workers"]))
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", suffix=".shards.tmp", dir=out))
        try:
            total = sum(unit.weight for unit in work(spec) if unit.kind != DECODABILITY)
            shards = gather(distributed, client, loaded, device, count, staging, Tally(total, progress), chunk_size)
            for shard in shards:
                if shard.spec[1] != loaded.sha256:
                    raise OrderlabError(f"a worker read another {loaded.path} (sha256 {shard.spec[1][:12]}) than this "
                                        "machine; expected workers that see the same spec file")  # fmt: skip
            return replace(merge_into(shards, folder), seconds=time.perf_counter() - started)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def connect(distributed: ModuleType, cluster: int | str) -> Iterator[Any]:
    """A client of a new local cluster of processes (one thread each), or of the scheduler at an address."""
    if isinstance(cluster, int):
        with (
            distributed.LocalCluster(
                n_workers=cluster, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.ERROR,
            ) as local,
            distributed.Client(local) as client,
        ):  # fmt: skip
            yield client
        return
    try:
        client = distributed.Client(cluster, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise OrderlabError(f"--scheduler {cluster}: {error}; expected a running Dask scheduler's address") from None
    with client:
        yield client


class Tally:
    """One progress bar for the whole run: the sequences each shard reported last, summed (a retried shard restarts)."""

    def __init__(self, total: int, progress: Callable[[int, int], None] | None):
        self.total, self.progress = total, progress
        self.done: dict[int, int] = {}

    def event(self, event: tuple[float, dict[str, int]]) -> None:
        message = event[1]
        self.done[message["shard"]] = message["done"]
        if self.progress:
            self.progress(sum(self.done.values()), self.total)


def gather(
    distributed: ModuleType,
    client: Any,
    loaded: LoadedSpec,
    device: torch.device,
    count: int,
    staging: Path,
    tally: Tally,
    chunk_size: int | None,
) -> list[Any]:
    """Submit the shards, write each one's files under `staging` as it arrives, and return them read back, checked."""
    topic = f"orderlab-progress-{uuid.uuid4().hex}"
    client.subscribe_topic(topic, tally.event)
    arguments = (str(loaded.path), str(device), count, chunk_size, torch.get_num_threads(), topic)
    futures = [
        client.submit(measure_shard, index, *arguments, key=f"{topic}-shard-{index}", retries=RETRIES, pure=False)
        for index in range(1, count + 1)
    ]
    folders = []
    try:
        for future, files in distributed.as_completed(futures, with_results=True):
            index = futures.index(future) + 1
            shard = staging / shard_folder_name(loaded.spec.name, index, count)
            shard.mkdir()
            for name, content in files.items():
                (shard / name).write_bytes(content)
            folders.append(shard)
    except distributed.KilledWorker as error:
        detail = f"a Dask worker died running {error.args[0]} each time it was tried; nothing was written"
        raise OrderlabError(detail) from None
    finally:
        client.cancel(futures)
        client.unsubscribe_topic(topic)
    return complete([read_shard(folder) for folder in folders])


def measure_shard(
    index: int, spec_path: str, device: str, count: int, chunk_size: int | None, threads: int, topic: str
) -> dict[str, bytes]:
    """On a worker: shard `index` of `count` into a private temporary folder, returned as {file name: bytes}."""
    distributed = import_distributed()
    worker = distributed.get_worker()
    torch.set_num_threads(threads)  # Dask starts workers with one; the run's numbers must be those of the client's
    loaded = load_spec(Path(spec_path))

    def report(done: int, total: int) -> None:
        worker.log_event(topic, {"shard": index, "done": done})

    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "shard"
        write_shard(loaded, torch.device(device), folder, (index, count), report, chunk_size)
        return {path.name: path.read_bytes() for path in folder.iterdir()}
