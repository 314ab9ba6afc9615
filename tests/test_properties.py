"""Random edits and bad values: only Verdicts or DesignErrors come out, and the process survives."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tslab
from tslab import DesignError, Verdict
from tslab.core.steps import SECTIONS, STAGES
from tslab.kernels import NAMES, design

values = st.one_of(st.integers(-3, 300), st.booleans(), st.none(), st.text(max_size=6),
                   st.lists(st.integers(-1, 5), max_size=5), st.sampled_from(["All", "CtaLeader", "All|CtaLeader"]))
fields = st.sampled_from(["num_stages", "num_bytes", "interleave_stride", "advance_on_wait", "advance_on_acquire",
                          "producer_signaling_threads", "consumer_group", "pipeline_type", "bogus"])
names = st.sampled_from(["smem_ring", "smem_ab", "smem_epi", "stage_a", "stage_b", "gmem_in", "nope"])
tasks = st.sampled_from(["LoadTask", "StoreTask", "MmaTask", "MidTask", "CopyTask", "Nope"])
steps = st.lists(st.tuples(names, st.sampled_from([*STAGES, "Bad"]), st.sampled_from([*SECTIONS, "Middle"]),
                           st.sampled_from([None, "store", "read", "coords", "x"])), max_size=6)
alloc_names = st.sampled_from(["ring_buf", "a_buf", "b_buf", "epi_buf", "nope"])
groups = st.lists(st.lists(st.lists(alloc_names, max_size=2), max_size=3), max_size=2)

edit = st.one_of(
    st.tuples(st.just("pipeline"), names, fields, values),
    st.tuples(st.just("schedule"), tasks, steps),
    st.tuples(st.just("alias"), groups),
)


def apply(d, e):
    if e[0] == "pipeline":
        return d.with_pipeline(e[1], **{e[2]: e[3]})
    if e[0] == "schedule":
        return d.with_schedule(e[1], e[2])
    return d.with_alias_groups(e[1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.lists(edit, max_size=3))
def test_random_edits_give_verdicts_or_design_errors(name, edits):
    d = design(name)
    for e in edits:
        try:
            d = apply(d, e)
        except DesignError as exc:
            assert exc.where and exc.message and exc.hint
    verdict = tslab.check(d, max_states=20_000)
    assert isinstance(verdict, Verdict)
    assert verdict.status in {"SAFE", "DEADLOCK", "RACE", "PDL-ORDER", "CAPACITY", "INVALID", "NOT PROVEN"}
    assert verdict.ok == (verdict.status == "SAFE")
