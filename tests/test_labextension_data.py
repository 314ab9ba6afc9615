"""The data the JupyterLab extension's own tests read is what tslab emits today.

``labextension/test/fixtures/`` holds recorded mime payloads (the demo_deadlock and demo_race traces, a
demo_guards verdict and a run of it to completion (loop guards), a gemm_sm90 verdict with aliased phases, a TMEM
map with aliased phases (attention_tmem) and one past TMEM's capacity (gemm_sm100 with 3 accumulator stages), a
design file, the timeline of an H200 profile of gemm_sm90, the flows of the catalog's pipelined designs (what the
flow diagram lays out)) and
``labextension/src/catalog.json`` the kernels the launcher offers. Rewrite both after a change with
``python tests/test_labextension_data.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tslab
from tslab.kernels import catalog, design
from tslab.kernels.gemm_sm90 import ALIASED, PINGPONG

EXT = Path(__file__).resolve().parents[1] / "labextension"
FIXTURES = EXT / "test" / "fixtures"


def _plain(value):
    return json.loads(json.dumps(value))


def _timeline() -> dict[str, object]:
    """The timeline payload of the recorded H200 profile of gemm_sm90 (tests/fixtures/iket)."""
    import gzip

    from tslab.gpu.profiled_tasks import task_steps
    from tslab.gpu.timeline import Timeline

    with gzip.open(Path(__file__).parent / "fixtures" / "iket" / "gemm_sm90_replay.job.json.gz", "rt") as fh:
        job = json.load(fh)
    return Timeline.from_job("gemm_sm90", task_steps(design("gemm_sm90").lower().tasks), job).to_mime()


#: The designs whose flows the flow diagram's tests lay out: every pipelined catalog kernel, ping-pong and merged rings.
FLOWS = {"tma_copy": {}, "gemm_sm90": {}, "gemm_sm90_pingpong": PINGPONG, "gemm_sm100": {},
         "gemm_sm100_merged": {"ab_rings": "merged"}, "attention_tmem": {}, "attention_sm90": {}}


def _flows() -> dict[str, object]:
    """Each design's flow: its schedule table, task rows and rings (``Verdict.to_mime()``'s parts the diagram reads)."""
    out = {}
    for name, params in FLOWS.items():
        payload = tslab.check(design(name.removesuffix("_pingpong").removesuffix("_merged"), **params)).to_mime()
        out[name] = {k: payload[k] for k in ("schedule", "tasks", "rings")}
    return _plain(out)


def recorded() -> dict[str, object]:
    """File name -> the payload tslab emits now."""
    deadlock, race = (tslab.check(design(k)) for k in ("demo_deadlock", "demo_race"))
    gemm = tslab.check(design("gemm_sm90", **ALIASED))  # the variant whose epilogue aliases the A/B ring
    saved = design("gemm_sm90", stages=3)
    return {
        "trace_demo_deadlock.json": _plain(deadlock.trace.to_dict()),
        "trace_demo_race.json": _plain(race.trace.to_dict()),
        "verdict_gemm_sm90.json": _plain(gemm.to_mime()),
        "verdict_demo_deadlock.json": _plain(deadlock.to_mime()),
        "verdict_attention_tmem.json": _plain(tslab.check(design("attention_tmem")).to_mime()),
        "verdict_gemm_sm100_over.json": _plain(tslab.check(design("gemm_sm100", acc_stages=3)).to_mime()),
        "design_gemm_sm90.tslab.json": _plain({**saved.to_dict(), "verdict": tslab.check(saved).to_mime()}),
        "timeline_gemm_sm90.json": _plain(_timeline()),
        "verdict_demo_guards.json": _plain(tslab.check(design("demo_guards")).to_mime()),
        "trace_demo_guards.json": _plain(tslab.trace(design("demo_guards", stages=2), to="complete").to_dict()),
        "flows.json": _flows(),
    }


def catalog_json() -> list[dict[str, str]]:
    return [{"name": k.name, "summary": k.summary} for k in catalog()]


@pytest.mark.parametrize("name", sorted(recorded()))
def test_recorded_payloads_are_current(name):
    assert json.loads((FIXTURES / name).read_text()) == recorded()[name], \
        f"labextension/test/fixtures/{name} is stale; run: python tests/test_labextension_data.py"


def test_launcher_catalog_is_current():
    assert json.loads((EXT / "src" / "catalog.json").read_text()) == catalog_json(), \
        "labextension/src/catalog.json is stale; run: python tests/test_labextension_data.py"


if __name__ == "__main__":
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, payload in recorded().items():
        (FIXTURES / name).write_text(json.dumps(payload, indent=1) + "\n")
    (EXT / "src" / "catalog.json").write_text(json.dumps(catalog_json(), indent=2) + "\n")
