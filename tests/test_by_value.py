"""What only this process holds travels by value: functions and classes typed into a notebook cell, lambdas,
closures, with their cells' text; what cannot be copied is named."""

from __future__ import annotations

import functools
import os
import sys
import threading
import types

import pytest
from cells import notebook_cells

from tslab.capture import portable
from tslab.capture.worker import run_in_child

CELL = """
import inspect
import math

SCALE = 3


class Ring:
    def __init__(self, stages):
        self.stages = stages

    def slots(self):
        return [s * SCALE for s in range(self.stages)]


def typed_into_a_cell(x):
    return Ring(x).slots(), math.pi > 3, os.getpid()


def source_there():
    return inspect.getsource(typed_into_a_cell)


def ring_there():
    return Ring(2)
"""


@pytest.fixture
def cell():
    with notebook_cells() as run:
        yield run("import os\n" + CELL)


def test_a_cell_function_runs_in_the_fork_server_with_its_globals(cell):
    outcome = run_in_child(cell["typed_into_a_cell"], 3)
    assert not outcome.forked and outcome.error is None
    slots, pi, pid = outcome.value
    assert slots == [0, 3, 6] and pi and pid != os.getpid()


def test_the_cells_text_arrives_where_dsl_reads_it(cell):
    outcome = run_in_child(cell["source_there"])
    assert not outcome.forked and outcome.value.startswith("def typed_into_a_cell(x):")


def test_an_object_of_a_cell_class_comes_back_as_the_callers_class(cell):
    outcome = run_in_child(cell["ring_there"])
    assert not outcome.forked and type(outcome.value) is cell["Ring"] and outcome.value.slots() == [0, 3]


def test_lambdas_and_closures_are_copied():
    offset = 5
    assert run_in_child(lambda: offset + 1).value == 6

    @functools.cache
    def cached():  # as TS's @consumer_work(returns=...) keeps one on each work method
        return offset * 2

    copied = portable.loads(portable.dumps(cached))
    assert copied is not cached and copied() == 10 and copied.cache_info().maxsize is None


def test_importable_functions_still_travel_by_reference():
    data = portable.dumps(os.getpid)
    assert b"getpid" in data and portable.loads(data) is os.getpid


def test_what_cannot_be_copied_is_named_with_the_path_to_it():
    with notebook_cells() as run:
        ns = run("import threading\nlock = threading.Lock()\ndef helper():\n    with lock:\n        return 1\n"
                 "def make():\n    return helper()\n")
        with pytest.raises(portable.NotPortable) as caught:
            portable.dumps(ns["make"], "make")
    assert caught.value.detail == ("make -> global 'helper' -> global 'lock' (lock: cannot pickle '_thread.lock' "
                                   "object)")


def test_a_cuda_tensor_is_never_copied(monkeypatch):
    class Tensor:
        is_cuda, dtype, shape, device = True, "torch.float16", (6, 256), "cuda:0"

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=Tensor))
    held = Tensor()
    with pytest.raises(portable.NotPortable) as caught:
        portable.dumps(lambda: held, "make")
    assert caught.value.detail == ("make -> 'held' (from the enclosing function) (Tensor: a CUDA tensor, float16 "
                                   "(6, 256) on cuda:0, which stays on its GPU)")


def test_what_cannot_be_copied_runs_in_a_fork_of_this_process():
    lock = threading.Lock()

    def holds_a_lock():
        with lock:
            return os.getppid()

    outcome = run_in_child(holds_a_lock)
    assert outcome.forked and outcome.value == os.getpid()


def test_without_cloudpickle_what_needs_a_copy_says_so_and_the_rest_travels_by_reference(monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    assert portable.loads(portable.dumps(os.getpid)) is os.getpid
    with pytest.raises(portable.NotPortable) as caught:
        portable.dumps(lambda: 1, "make")
    assert (caught.value.detail, caught.value.fix) == ("copying it needs cloudpickle, which is not installed here",
                                                       "pip install cloudpickle")
