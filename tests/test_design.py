import pytest

import tslab
from tslab import Design, DesignError
from tslab.kernels import demo_race, gemm_sm90, tma_copy


def test_json_round_trip_and_equality():
    d = tma_copy.design(stages=3).with_pipeline("smem_ring", num_stages=2).with_alias_groups([])
    again = Design.from_json(d.to_json())
    assert again == d
    assert hash(again) == hash(d)
    assert again != tma_copy.design(stages=3)


def test_repr_reads_like_code():
    d = tma_copy.design(stages=3).with_pipeline("smem_ring", num_stages=2)
    assert repr(d).startswith("tslab.kernels.tma_copy.design(stages=3")
    assert ".with_pipeline('smem_ring', num_stages=2)" in repr(d)


def test_edits_return_new_designs_and_keep_the_old():
    d = tma_copy.design()
    e = d.with_pipeline("smem_ring", num_stages=2)
    assert d.pipelines()["smem_ring"]["num_stages"] == 4
    assert e.pipelines()["smem_ring"]["num_stages"] == 2
    assert d.overrides["pipelines"] == {}


def test_pipelines_tasks_allocations():
    d = gemm_sm90.design()
    assert d.tasks() == ["LoadTask", "MmaTask", "EpilogueTask"]
    assert d.pipelines()["smem_ab"]["pipeline_type"] == "TmaAsync"
    assert d.pipelines()["smem_ab"]["consumer_group"] == {"agent": "Thread", "size": 256}
    assert d.pipelines()["smem_ab"]["advance_on_wait"] is True
    sizes = {a["name"]: a["size"] for a in d.allocations()}
    assert sizes == {"a_buf": 3 * 128 * 64 * 2, "b_buf": 3 * 256 * 64 * 2, "epi_buf": 128 * 256 * 2}
    assert d.alias_groups() == []  # persistent: the C tile has its own bytes
    aliased = gemm_sm90.design(persistent=False, epilogue="aliased", stages=4)
    assert aliased.alias_groups() == [[["a_buf", "b_buf"], ["epi_buf"]]]


def test_schedule_reads_back_a_schedule_written_with_the_decorator():
    steps = tma_copy.design().schedule("StoreTask")
    assert steps == [("smem_ring", "ConsumerAuxWork", "Head", "bind_read"),
                     ("smem_ring", "ConsumerWait", "Loop", None),
                     ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
                     ("gmem_out", "ProducerWork", "Loop", "store"),
                     ("smem_ring", "ConsumerRelease", "Loop", None)]


def test_with_schedule_maps_plain_steps_to_ts_and_back():
    d = tma_copy.design()
    steps = d.schedule("StoreTask")
    moved = [steps[0], steps[1], steps[2], steps[4], steps[3]]  # release before the store
    e = d.with_schedule("StoreTask", moved)
    assert e.schedule("StoreTask") == moved
    assert tslab.check(e).ok


def test_with_schedule_can_break_a_design():
    d = tma_copy.design(stages=1)
    steps = d.schedule("StoreTask")
    wait, release = steps[1], steps[4]
    broken = [steps[0], (wait[0], wait[1], "Head", None), (wait[0], wait[1], "Head", None),
              steps[2], steps[3], (release[0], release[1], "Tail", None), (release[0], release[1], "Tail", None)]
    verdict = tslab.check(d.with_schedule("StoreTask", broken))
    assert verdict.status == "DEADLOCK"


def test_alias_groups_override():
    d = demo_race.design()
    assert tslab.check(d).status == "RACE"
    assert tslab.check(d.with_alias_groups([])).ok
    assert tslab.check(d.with_alias_groups(None)).status == "RACE"


@pytest.mark.parametrize(("edit", "where", "match"), [
    (lambda d: d.with_pipeline("smem_rin", num_stages=2), "resource 'smem_rin'", "did you mean 'smem_ring'"),
    (lambda d: d.with_pipeline("smem_ring", num_stage=2), "field 'num_stage'", "did you mean 'num_stages'"),
    (lambda d: d.with_pipeline("smem_ring", num_stages=0), "num_stages", "positive int"),
    (lambda d: d.with_pipeline("smem_ring", num_stages=-3), "num_stages", "positive int"),
    (lambda d: d.with_pipeline("smem_ring", interleave_stride=3), "interleave_stride", "divide"),
    (lambda d: d.with_pipeline("gmem_in", num_stages=2), "resource 'gmem_in'", "no pipeline"),
    (lambda d: d.with_pipeline("smem_ring", pipeline_type=None), "pipeline_type", "None is not allowed"),
    (lambda d: d.with_pipeline("smem_ring", producer_signaling_threads="Al"), "producer_signaling_threads",
     "did you mean 'All'"),
    (lambda d: d.with_schedule("StoreTsk", []), "task 'StoreTsk'", "did you mean 'StoreTask'"),
    (lambda d: d.with_schedule("StoreTask", [("smem_ring", "Wait", "Loop", None)]), "step 0", "ScheduleStage"),
    (lambda d: d.with_schedule("StoreTask", [("nope", "ConsumerWait", "Loop", None)]), "step 0", "not in this design"),
    (lambda d: d.with_schedule("StoreTask", [("smem_ring", "ConsumerWait", "Tail", None),
                                             ("smem_ring", "ConsumerRelease", "Head", None)]), "step 1", "Head"),
    (lambda d: d.with_alias_groups([[["ring_buf"]]]), "alias group 0", "fewer than 2 phases"),
    (lambda d: d.with_alias_groups([[["ring_buf"], ["nope"]]]), "phase 1", "not in this design"),
    (lambda d: d.with_params(stages=0), "param 'stages'", "positive int"),
    (lambda d: d.with_params(stage=2), "param 'stage'", "did you mean 'stages'"),
])
def test_bad_edits_raise_design_errors_that_name_the_place(edit, where, match):
    with pytest.raises(DesignError, match=match) as info:
        edit(tma_copy.design())
    assert where in str(info.value)
    assert info.value.hint


@pytest.mark.parametrize("text", ["{bad", "[]", '{"kernel": "nope"}', '{"kernel": "tma_copy", "params": []}',
                                  '{"kernel": "tma_copy", "color": 1}', "null"])
def test_malformed_json_is_a_design_error(text):
    with pytest.raises(DesignError):
        Design.from_json(text)


@pytest.mark.parametrize("field", ["advance_on_wait", "advance_on_acquire"])
@pytest.mark.parametrize("value", [2.5, "x", 1])
def test_a_boolean_pipeline_field_takes_only_true_or_false(field, value):
    with pytest.raises(DesignError, match=rf"resource 'smem_ring' field '{field}': {field}={value!r} is not a boolean"
                       rf"; nothing was applied\n  hint: give True or False, e.g. {field}=True") as info:
        tma_copy.design().with_pipeline("smem_ring", **{field: value})
    assert info.value.kind == "input"
    edited = tma_copy.design().with_pipeline("smem_ring", **{field: True})
    assert edited.pipelines()["smem_ring"][field] is True
