"""Carrying TS objects out of a trace: placeholders for DSL values, ids re-keyed to the new objects."""

import pickle

from cutlass.experimental.task_scheduling.resources import MemoryResource
from fixtures import ring_copy

from tslab.capture.snapshot import Traced, dump, load, rekey


def test_rekey_replaces_old_ids_inside_containers_only():
    value = {(7, "stage", 0): [(7, 1)], "n": 7, "other": {8: frozenset({(7,)})}}
    assert rekey(value, {7: 70}) == {(70, "stage", 0): [(70, 1)], "n": 70, "other": {8: frozenset({(70,)})}}
    assert rekey(True, {1: 5}) is True


def test_traced_placeholder_pickles_and_is_not_an_int():
    t = Traced("Pointer", "ptr<f16, smem>")
    assert pickle.loads(pickle.dumps(t)) == t
    assert not isinstance(t, int)
    assert "ptr<f16" in repr(t)


def test_dump_and_load_keep_slot_routing_consistent():
    tasks, graph, allocator = ring_copy.make_parts(4, 2)
    data, traced = dump({"tasks": tasks, "graph": graph, "smem_allocator": allocator, "tmem_allocator": None})
    assert traced == []  # nothing DSL-valued outside a trace
    bundle = load(data)
    fill = bundle["tasks"][0]
    ids = {id(r) for t in bundle["tasks"] for r in (*t.src_resources, *t.dst_resources)}
    assert fill.slot_routing and {key[0] for key in fill.slot_routing} <= ids
    assert all(isinstance(r, MemoryResource) for r in fill.src_resources)
    assert bundle["smem_allocator"].total == allocator.total
