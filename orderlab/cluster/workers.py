"""`orderlab run --workers N` / `--scheduler ADDRESS`: a run's shards as Dask tasks, merged here into its folder.

Each task runs one shard (commands/run.write_shard: the one measuring loop, restricted to the shard's
units) in a private temporary folder on its worker and returns the folder's files as bytes, so workers
share no file system with this machine; they need the spec at the same path and the same orderlab.
Here the shards land in a staging folder beside the destination and are merged (merge.merge_into);
the staging folder is removed whatever happens, and the results folder is written whole or not at all.
Dask retries a task that raises (RETRIES) and reschedules one whose worker died; bad input (an OrderlabError:
a broken plug-in encoding, a spec the worker reads otherwise) is the same on every try, so a worker returns it
and this process raises it: the same one line and exit code as a run here, no retry, no Dask log. Workers use
this process's torch thread count, so their numbers, and the manifest, are those of a run here.

A local cluster is bounded by this machine (local_worker_limit: a worker per core, and no more than the memory
available holds at the spec's own estimate per worker), and on an error or an interrupt (Ctrl-C, SIGTERM) its
worker processes are killed at once: what they were measuring is thrown away anyway, and a graceful close
waits for a busy worker's task for seconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import torch

from orderlab.core.progress import Progress
from orderlab.errors import OrderlabError
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.plan.amounts import size
from orderlab.plan.device import available_memory
from orderlab.plan.estimate import estimate
from orderlab.plan.rates import MEMORY_SHARE
from orderlab.plan.shards import DECODABILITY, require_shardable, shard_folder_name, work
from orderlab.results.merge import complete, merge_into, read_shard
from orderlab.results.outcome import Outcome
from orderlab.results.ownership import Writer, claim
from orderlab.spec.load import LoadedSpec, load_spec

RETRIES = 2  # runs of a task that raised, after the first; a dead worker's task is rescheduled by Dask itself
# What a Dask worker's nanny process holds beside the worker (Python, distributed, tornado), rounded up; the
# worker itself is counted by the spec's estimate, whose peak includes a process's Python, torch and pandas.
NANNY_BYTES = 150 * 10**6
EXTRA = "--workers and --scheduler need Dask; expected it installed: pip install 'orderlab[dist]'"


class ShardWriter(Protocol):
    """What writes one shard's folder on a worker (commands/run.write_shard, passed in by the run command that sits
    above this layer): a module-level function, so that Dask pickles it by name."""

    def __call__(
        self, loaded: LoadedSpec, folder: Path, shard: tuple[int, int], options: RunOptions = DEFAULTS
    ) -> object: ...


def import_distributed() -> ModuleType:
    """dask.distributed, or one line saying how to get it."""
    try:
        import distributed  # lazy: an optional extra ([dist]) and a second-long import that only these options need
    except ImportError:
        raise OrderlabError(EXTRA) from None
    # Dask logs from background threads, also after a cluster has closed (a comm closing as killed workers go, with
    # its traceback); orderlab reports a run's errors itself in one line, so Dask's loggers stay quiet in this
    # process. Set before a LocalCluster, whose silence_logs restores the level it found when it closes.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    return distributed


def run_on_dask(
    loaded: LoadedSpec, out: Path, cluster: int | str, write_shard: ShardWriter, options: RunOptions = DEFAULTS
) -> Outcome:
    """Run the spec as shards on a local cluster of `cluster` processes (an int) or at a scheduler's address (a
    string), one shard per worker (each written by `write_shard`), and merge them into OUT/<spec name>/ as a whole
    run would write it."""
    require_travelling(loaded)
    distributed = import_distributed()
    spec = loaded.spec
    require_shardable(spec, loaded.path)
    if isinstance(cluster, int):
        require_room_for(cluster, loaded)
    folder = out / spec.name
    with claim(folder, Writer("run", spec.name), options.force), connect(distributed, cluster) as client:
        count = cluster if isinstance(cluster, int) else max(1, len(client.scheduler_info()["workers"]))
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", suffix=".shards.tmp", dir=out))
        try:
            total = sum(unit.weight for unit in work(spec) if unit.kind != DECODABILITY)
            tally = Tally(total, options.progress)
            shards = gather(distributed, client, loaded, count, staging, tally, options, write_shard)
            for shard in shards:
                if shard.spec[1] != loaded.sha256:
                    raise OrderlabError(f"a worker read another {loaded.path} (sha256 {shard.spec[1][:12]}) than this "
                                        "machine; expected workers that see the same spec file")  # fmt: skip
            return merge_into(shards, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def require_travelling(loaded: LoadedSpec) -> None:
    """Each worker reads the spec file anew: what lives only in this process (a model object, the user's hook
    functions, a spec given as a dict) cannot reach it, so such a run is refused before any worker starts."""
    model = loaded.spec.model
    stays = ["a model object (model=)"] if getattr(model, "given", None) is not None else []
    stays += ["the hooks (hooks=)"] if getattr(model, "user_hooks", None) else []
    stays += [] if loaded.path.is_file() else ["a spec given as a dict"]
    if stays:
        raise OrderlabError(
            f"workers: {' and '.join(stays)} stay in this process, and each Dask worker reads the spec file anew; "
            "expected a spec file run without model= and hooks=, or a run without workers= and scheduler="
        )


def local_worker_limit(loaded: LoadedSpec) -> tuple[int, str]:
    """How many local workers this machine holds for this spec, and why: one per core (two on a single core, so
    the cluster path can still be tried), and within MEMORY_SHARE of the memory available, each worker taking
    the spec's estimated peak (estimate.py: the largest combination, a process's imports included) plus a nanny."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    per_worker = max(item.peak_bytes for item in estimate(loaded.spec, loaded.path)) + NANNY_BYTES
    available = available_memory()
    by_memory = int(MEMORY_SHARE * available // per_worker)
    why = f"{cores} core(s) and {size(available)} of memory available, ~{size(per_worker)} per worker for this spec"
    return min(max(2, cores), by_memory), why


def require_room_for(count: int, loaded: LoadedSpec) -> None:
    """Refuse (one line) more local workers than the machine holds, before any process starts."""
    limit, why = local_worker_limit(loaded)
    if count > limit:
        raise OrderlabError(f"--workers {count}: this machine has {why}; expected at most {limit}")


@contextmanager
def connect(distributed: ModuleType, cluster: int | str) -> Iterator[Any]:
    """A client of a new local cluster of processes (one thread each), or of the scheduler at an address."""
    if isinstance(cluster, int):
        with distributed.LocalCluster(
            n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "localhost:0"},  # its HTTP routes on a free port, never 8787's
            silence_logs=logging.CRITICAL,  # a task's error comes back here as one line, not as a worker's log
        ) as local:  # fmt: skip
            try:  # workers start only once an interrupt can kill them: starting two takes seconds
                local.scale(cluster)
                with distributed.Client(local) as client:
                    client.wait_for_workers(cluster)
                    yield client
            except BaseException:
                kill_workers()
                raise
        return
    try:
        client = distributed.Client(cluster, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise OrderlabError(f"--scheduler {cluster}: {error}; expected a running Dask scheduler's address") from None
    with client:
        yield client


def kill_workers() -> None:
    """SIGKILL every process this one started, a local cluster's nannies and workers (orderlab starts no others),
    so that closing the cluster takes a moment, not a busy task's end or a starting worker's time-outs."""
    import multiprocessing.resource_tracker

    import psutil  # type: ignore[import-untyped]  # a dependency of distributed

    tracker = getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)  # cleans up after them
    for child in psutil.Process().children(recursive=True):
        if child.pid != tracker:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


class Tally:
    """One progress bar for the whole run: the sequences each shard reported last, summed (a retried shard restarts)."""

    def __init__(self, total: int, progress: Progress | None):
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
    count: int,
    staging: Path,
    tally: Tally,
    options: RunOptions,
    write_shard: ShardWriter,
) -> list[Any]:
    """Submit the shards, write each one's files under `staging` as it arrives, and return them read back, checked.
    Workers get the options without this process's callbacks (they report through a Dask topic instead)."""
    topic = f"orderlab-progress-{uuid.uuid4().hex}"
    client.subscribe_topic(topic, tally.event)
    arguments = (str(loaded.path), count, options.reporting(None), torch.get_num_threads(), topic, write_shard)
    futures = [
        client.submit(measure_shard, index, *arguments, key=f"{topic}-shard-{index}", retries=RETRIES, pure=False)
        for index in range(1, count + 1)
    ]
    folders = []
    try:
        for future, files in distributed.as_completed(futures, with_results=True):
            if isinstance(files, OrderlabError):
                raise files
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
    index: int, spec_path: str, count: int, options: RunOptions, threads: int, topic: str, write_shard: ShardWriter
) -> dict[str, bytes] | OrderlabError:
    """On a worker: shard `index` of `count` into a private temporary folder, returned as {file name: bytes};
    bad input, the OrderlabError that a run here would raise, returned as it is (not raised: no retry, no log)."""
    try:
        return shard_files(index, spec_path, count, options, threads, topic, write_shard)
    except OrderlabError as error:
        return error


def shard_files(
    index: int, spec_path: str, count: int, options: RunOptions, threads: int, topic: str, write_shard: ShardWriter
) -> dict[str, bytes]:
    """measure_shard's work: the shard's files, read back from the temporary folder it was written to."""
    distributed = import_distributed()
    worker = distributed.get_worker()
    torch.set_num_threads(threads)  # Dask starts workers with one; the run's numbers must be those of the client's
    loaded = load_spec(Path(spec_path))

    def report(done: int, total: int) -> None:
        worker.log_event(topic, {"shard": index, "done": done})

    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "shard"
        write_shard(loaded, folder, (index, count), options.reporting(report))  # the device checked here too
        return {path.name: path.read_bytes() for path in folder.iterdir()}
