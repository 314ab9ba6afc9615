"""The executors give the same table: in this process, in a pool of workers, as Ray tasks."""

import importlib.util

import pytest

import tslab
from tslab.sweep import SweepError

SPACE = {"stages": [2, 8], "tile_cols": [256]}
SAME = ["stages", "tile_cols", "status", "reason", "smem_bytes", "states", "registers", "spills"]


def compile_sweep(executor, store=None):
    r = tslab.sweep("tma_copy", SPACE, measure="compile", arch="sm_90a", executor=executor, store=store, quiet=True)
    return r.table[[c for c in SAME if c in r.table]]


@pytest.fixture(scope="module")
def pool_table():
    return compile_sweep(2)


def test_pool_compiles_the_survivors(pool_table):
    assert pool_table["status"].tolist() == ["ok", "pruned"]
    assert pool_table["registers"].notna().tolist() == [True, False]


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
def test_ray_gives_the_pool_s_table_and_streams_into_the_store(pool_table, tmp_path):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    store = tmp_path / "sweep.jsonl"
    try:
        assert compile_sweep("ray", store).equals(pool_table)
    finally:
        ray.shutdown()
    assert len(store.read_text().splitlines()) == 1 + len(pool_table)


def test_an_unknown_executor_is_refused():
    with pytest.raises(SweepError, match="executor='dask' is not an executor"):
        tslab.sweep("tma_copy", SPACE, measure="check", executor="dask", quiet=True)


def test_without_ray_the_message_says_how_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SweepError, match=r'pip install "tslab\[ray\]"'):
        tslab.sweep("tma_copy", SPACE, measure="check", executor="ray", quiet=True)


def test_pool_and_ray_cpu_workers_run_jobs_in_process():
    import os

    from tslab.gpu.worker import IN_PROCESS_ENV
    from tslab.sweep.executors import PoolExecutor

    pool = PoolExecutor(1)
    try:
        assert list(pool.run(os.getenv, iter([("k", (IN_PROCESS_ENV,))]))) == [("k", "1")]
    finally:
        pool.close()
    assert os.environ.get(IN_PROCESS_ENV) is None  # the caller's own process still spawns a worker per job
