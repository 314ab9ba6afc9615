"""The sweep store: header checked on reopen, resume skips finished points, a cut-off line is dropped,
an interrupt keeps every finished point."""

import json
import multiprocessing
import os
import signal

import pytest

import tslab
from tslab.sweep import StoreCorruptError, StoreMismatchError, SweepInterrupted, SweepResult

SPACE = {"stages": [2, 3, 4, 8], "tile_cols": [128, 256]}


def run(store, **kw):
    return tslab.sweep("tma_copy", SPACE, measure="check", executor="serial", store=store, quiet=True, **kw)


def test_resume_skips_finished_points_and_survives_a_cut_line(tmp_path):
    store = tmp_path / "sweep.jsonl"
    first = run(store, where=lambda p: p["stages"] < 4)
    assert len(first.table) == 4 and first.skipped == 0
    with store.open("a") as fh:
        fh.write('{"key": "{\\"stages\\":4,')  # a line cut off mid-write
    second = run(store)
    assert second.skipped == 4 and len(second.table) == 8
    assert second.table.drop(columns="check_s").equals(run(tmp_path / "fresh.jsonl").table.drop(columns="check_s"))
    lines = store.read_text().splitlines()
    assert len(lines) == 1 + 8 and all(json.loads(line) for line in lines)
    assert run(store).skipped == 8
    loaded = SweepResult.load(store)
    assert loaded.table.equals(second.table) and loaded.pruned == {"capacity": 1}


def test_a_store_of_another_sweep_is_refused(tmp_path):
    store = tmp_path / "sweep.jsonl"
    run(store)
    with pytest.raises(StoreMismatchError, match=r"header's design is .* belongs to another sweep"):
        tslab.sweep(tslab.Design("tma_copy", {"tiles": 2}), SPACE, measure="check", executor="serial",
                    store=store, quiet=True)
    with pytest.raises(StoreMismatchError, match="header's measure is \"check\""):
        tslab.sweep("tma_copy", SPACE, measure="compile", executor="serial", store=store, quiet=True)


def test_a_broken_line_is_named(tmp_path):
    store = tmp_path / "sweep.jsonl"
    run(store, where=lambda p: p["stages"] == 2)
    with store.open("a") as fh:
        fh.write('{"key": "x", "point": {}, "row": {"status": "great"}}\n')
    with pytest.raises(StoreCorruptError, match=r"line 4: row/status 'great' is not one of"):
        run(store)


def test_a_killed_worker_loses_no_finished_point(tmp_path):
    store = tmp_path / "sweep.jsonl"
    seen = []

    def kill_a_worker(row):
        seen.append(row)
        if len(seen) == 1:
            os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)

    space = {"stages": [2, 3, 4, 5, 6, 7], "tile_cols": [64, 128, 256], "tiles": [2, 4]}
    with pytest.raises(SweepInterrupted, match=r"a worker process died .* store='.*' to resume") as caught:
        tslab.sweep("tma_copy", space, measure="check", executor=2, store=store, quiet=True, on_row=kill_a_worker)
    finished = caught.value.finished
    assert finished == len(seen) >= 1
    assert len(store.read_text().splitlines()) == 1 + finished
    resumed = tslab.sweep("tma_copy", space, measure="check", executor="serial", store=store, quiet=True)
    assert resumed.skipped == finished and len(resumed.table) == 36
