"""Task-local variable flow: TS's slot routing as a table, kept through schedule edits and checked by TS."""

from __future__ import annotations

import tslab
from tslab.kernels import demo_routing, gemm_sm100, tma_copy


def test_the_table_lists_each_routed_variable_from_writer_to_reader():
    flow = gemm_sm100.design().variable_flow()
    assert flow.to_dict("records") == [
        {"task": "EpilogueTask", "writer": "tmem_acc.stage (ConsumerWork, Loop #0)", "variable": "acc_stage",
         "reader": "gmem_c.store (ProducerWork, Loop #0)"},
        {"task": "MmaTask", "writer": "smem_ab.stage (ConsumerWork, Head #0)", "variable": "ab_stage",
         "reader": "tmem_acc.mma_first (ProducerWork, Head #0)"},
        {"task": "MmaTask", "writer": "smem_ab.stage (ConsumerWork, Loop #0)", "variable": "ab_stage",
         "reader": "tmem_acc.mma (ProducerWork, Loop #0)"},
        {"task": "LoadTask", "writer": "gmem_ab.k_coords (ConsumerWork, Loop #0)", "variable": "k",
         "reader": "smem_ab.tma_load (ProducerWork, Loop #0)"},
    ]


def test_a_reader_moved_before_its_writer_is_ts_s_routing_error_with_where_and_the_fix():
    design = demo_routing.design()
    v = tslab.check(design)
    assert v.status == "INVALID" and v.checker.verdict == "safe"  # no deadlock or race search could see it
    (issue,) = v.errors
    assert issue.where == "task 'LoadTask'"
    assert ("slot_routing lists no writer of variable 'row' that precedes reader 'smem_ring' ProducerWork[0]"
            in issue.message)
    assert "move the reading step after its writer" in issue.hint
    assert design.variable_flow()["variable"].tolist() == ["row"]  # the edit kept the kernel's routing
    fixed = design.with_schedule("LoadTask", tma_copy.design().schedule("LoadTask"))
    assert tslab.check(fixed).status == "SAFE"


def test_a_writer_dropped_by_an_edit_is_refused_too():
    steps = [s for s in tma_copy.design().schedule("LoadTask") if s[3] != "coords"]
    v = tslab.check(tma_copy.design().with_schedule("LoadTask", steps))
    assert v.status == "INVALID"
    assert any("slot_routing writer key 'gmem_in' ConsumerWork[0] has no matching schedule entry" in e.message
               for e in v.errors), v.errors


def test_an_edit_that_keeps_each_writer_first_keeps_the_design_safe():
    steps = list(tma_copy.design().schedule("LoadTask"))
    steps.insert(2, ("smem_ring", "ProducerTryAcquire", "Loop", None))  # poll before the blocking acquire
    edited = tma_copy.design().with_schedule("LoadTask", steps)
    assert tslab.check(edited).status == "SAFE" and len(edited.variable_flow()) == 1
