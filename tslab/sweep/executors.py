"""Where the stages run: in this process, in a local pool of worker processes, or as Ray tasks.

An executor takes an iterator of ``(key, args)`` tasks and yields ``(key, result)`` as each finishes. It pulls
a task only when it has room for it, so a sweep that stops early (a budget) never starts what it does not run.
CPU stages: up to ``jobs`` at once. GPU stages (``gpu=True``): one task per visible GPU at a time, each pinned
to its GPU, so no two kernels are ever timed on one GPU together.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
from collections.abc import Callable, Iterator
from typing import Any

from .errors import SweepError

Task = tuple[str, tuple[Any, ...]]


def gpu_count() -> int:
    """How many GPUs this machine's driver shows (0 without a driver)."""
    from ..gpu.device import device

    count = 0
    while device(count) is not None:
        count += 1
    return count


def _pin_gpu(index: int) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)


def _jobs_in_process() -> None:
    """A CPU pool worker is already isolated: its compiles run in it, not in one more spawned process each."""
    from ..gpu.worker import IN_PROCESS_ENV

    os.environ[IN_PROCESS_ENV] = "1"


def _call_in_process(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a Ray CPU worker, its compiles in that worker (:func:`_jobs_in_process`)."""
    _jobs_in_process()
    return fn(*args)


class SerialExecutor:
    """Every stage in this process, one point after another (the baseline; a debugger sees everything)."""

    name = "serial"

    def run(self, fn: Callable[..., Any], tasks: Iterator[Task], *, gpu: bool = False) -> Iterator[tuple[str, Any]]:
        for key, args in tasks:
            yield key, fn(*args)

    def close(self) -> None:
        pass


class PoolExecutor:
    """A local pool of ``jobs`` spawned worker processes for check and compile (each compiles in itself: it is
    already isolated); one process per GPU for timing (each run and timing in a fresh worker with a time limit)."""

    name = "pool"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        if self.jobs < 1:
            raise SweepError(f"sweep: jobs={jobs} is not a positive number of worker processes; give 1 or more")
        self._pools: dict[bool, list[cf.ProcessPoolExecutor]] = {}

    def _lanes(self, gpu: bool) -> list[cf.ProcessPoolExecutor]:
        if gpu not in self._pools:
            ctx = mp.get_context("spawn")
            if gpu:
                self._pools[gpu] = [cf.ProcessPoolExecutor(1, mp_context=ctx, initializer=_pin_gpu, initargs=(i,))
                                    for i in range(max(gpu_count(), 1))]
            else:
                self._pools[gpu] = [cf.ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=_jobs_in_process)]
        return self._pools[gpu]

    def run(self, fn: Callable[..., Any], tasks: Iterator[Task], *, gpu: bool = False) -> Iterator[tuple[str, Any]]:
        from ..gpu.worker import _main_not_reimported

        lanes = self._lanes(gpu)
        room = {id(p): (1 if gpu else self.jobs) for p in lanes}
        running: dict[cf.Future, tuple[str, cf.ProcessPoolExecutor]] = {}
        pending = iter(tasks)
        exhausted = False
        while True:
            for pool in lanes:
                while not exhausted and room[id(pool)] > 0:
                    task = next(pending, None)
                    if task is None:
                        exhausted = True
                        break
                    with _main_not_reimported():
                        running[pool.submit(fn, *task[1])] = (task[0], pool)
                    room[id(pool)] -= 1
            if not running:
                return
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for future in finished:
                key, pool = running.pop(future)
                room[id(pool)] += 1
                yield key, future.result()

    def close(self) -> None:
        for pools in self._pools.values():
            for pool in pools:
                pool.shutdown(wait=False, cancel_futures=True)
        self._pools.clear()


class RayExecutor:
    """The same stages as Ray tasks: check and compile on any node's CPUs, timing as tasks with ``num_gpus=1``.

    ``address``: ``"ray"`` (connect to a running cluster, else start a local one), a ``ray.init`` address
    (``"ray://host:10001"``, ``"auto"``), or ``None`` when Ray is already initialised by the caller.
    """

    name = "ray"

    def __init__(self, address: str | None = "ray") -> None:
        try:
            import ray
        except ImportError:
            raise SweepError('sweep: executor="ray" needs Ray, which is not installed; run: '
                             'pip install "tslab[ray]"') from None
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=None if address in (None, "ray") else address, ignore_reinit_error=True,
                     log_to_driver=False)
        self._remote: dict[tuple[Callable[..., Any], bool], Any] = {}

    def _slots(self, gpu: bool) -> int:
        resources = self._ray.cluster_resources()
        return max(int(resources.get("GPU" if gpu else "CPU", 1)), 1)

    def run(self, fn: Callable[..., Any], tasks: Iterator[Task], *, gpu: bool = False) -> Iterator[tuple[str, Any]]:
        ray = self._ray
        body = fn if gpu else _call_in_process
        remote = self._remote.setdefault((fn, gpu), ray.remote(num_gpus=1 if gpu else 0, num_cpus=1)(body))
        slots = self._slots(gpu)
        running: dict[Any, str] = {}
        pending = iter(tasks)
        exhausted = False
        while True:
            while not exhausted and len(running) < slots:
                task = next(pending, None)
                if task is None:
                    exhausted = True
                    break
                running[remote.remote(*task[1]) if gpu else remote.remote(fn, *task[1])] = task[0]
            if not running:
                return
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                yield running.pop(ref), ray.get(ref)

    def close(self) -> None:
        pass  # the cluster belongs to whoever started it; a local one ends with this process


def make_executor(executor: Any) -> Any:
    """``None`` (a pool of CPU-count workers), an int (a pool of that many), ``"serial"``, ``"pool"``,
    ``"ray"``, a ``ray.init`` address (``"ray://..."``, ``"auto"``), or an executor object."""
    if executor is None or executor == "pool":
        return PoolExecutor()
    if isinstance(executor, bool):
        raise SweepError(f"sweep: executor={executor!r} is not an executor; give None, a number of workers, "
                         "'serial', 'pool' or 'ray'")
    if isinstance(executor, int):
        return PoolExecutor(executor)
    if executor == "serial":
        return SerialExecutor()
    if isinstance(executor, str) and (executor in ("ray", "auto") or executor.startswith("ray://")
                                      or ":" in executor):
        return RayExecutor(executor)
    if getattr(executor, "__name__", "") == "ray" or type(executor).__module__.startswith("ray"):
        return RayExecutor(None)  # the ray module or a client context the caller already initialised
    if hasattr(executor, "run") and hasattr(executor, "close"):
        return executor
    raise SweepError(f"sweep: executor={executor!r} is not an executor; give None, a number of workers, "
                     "'serial', 'pool', 'ray' or a ray.init address such as 'ray://host:10001'")
