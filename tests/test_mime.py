"""The mime bundles a saved notebook keeps follow the schemas JupyterLab's tslab extension renders from."""

from __future__ import annotations

import json

import jsonschema
import pytest
from referencing import Registry, Resource

import tslab
from tslab.core import mime
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import ALIASED


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    resources = [(f"https://tslab/schemas/{k}.v1.json", Resource.from_contents(mime.schema(k))) for k in mime.KINDS]
    return jsonschema.Draft202012Validator(mime.schema(kind), registry=Registry().with_resources(resources))


@pytest.mark.parametrize("kind", sorted(mime.KINDS))
def test_each_schema_is_a_valid_schema(kind):
    jsonschema.Draft202012Validator.check_schema(mime.schema(kind))


@pytest.mark.parametrize("kernel", ["demo_deadlock", "demo_race", "gemm_sm90", "demo_overflow", "tma_copy",
                                    "demo_guards"])
def test_verdict_and_trace_bundles_follow_their_schemas(kernel):
    verdict = tslab.check(design(kernel))
    bundle = verdict._repr_mimebundle_()
    assert {"text/plain", "text/html", mime.VERDICT} <= set(bundle)
    _validator("verdict").validate(_saved(bundle[mime.VERDICT]))
    if verdict.trace is not None:
        _validator("trace").validate(_saved(verdict.trace._repr_mimebundle_()[mime.TRACE]))


def test_a_trace_saved_before_entries_named_their_guard_still_reads():
    saved = _saved(tslab.check(design("demo_deadlock")).trace.to_dict())
    for step in saved["steps"]:
        if step["entry"]:
            del step["entry"]["guard"]
    _validator("trace").validate(saved)
    assert tslab.Trace.from_dict(saved).to_dict()["steps"][1]["entry"]["guard"] is None


def _saved(payload):
    """The payload as a notebook file keeps it (tuples become lists)."""
    return json.loads(json.dumps(payload))


def test_a_verdict_bundle_is_the_same_on_every_run():
    assert tslab.check(design("demo_race")).to_mime() == tslab.check(design("demo_race")).to_mime()


def test_gemm_layout_keeps_aliased_phases():
    rows = tslab.check(design("gemm_sm90", **ALIASED)).to_mime()["layout"]
    phases = {(r["name"], r["alias_group"], r["phase"]) for r in rows}
    assert {("a_buf", 0, 0), ("epi_buf", 0, 1), ("barriers", None, None)} <= phases


def test_design_bundle_and_design_file(tmp_path):
    d = design("gemm_sm90", stages=3)
    _validator("design").validate(d._repr_mimebundle_()[mime.DESIGN])
    path = d.save(tmp_path / "gemm.tslab.json", verdict=tslab.check(d))
    saved = json.loads(path.read_text())
    _validator("design").validate(saved)
    assert saved["verdict"]["status"] == "SAFE"
    assert tslab.Design.from_json(path.read_text()) == d


def test_a_bad_bundle_is_refused_by_the_schema():
    payload = tslab.check(design("demo_deadlock")).to_mime()
    payload["status"] = "FINE"
    with pytest.raises(jsonschema.ValidationError, match="'FINE' is not one of"):
        _validator("verdict").validate(payload)


@pytest.mark.parametrize("name", ["tma_copy", "gemm_sm90_replay", "gemm_sm90_waits"])
def test_timeline_bundles_follow_their_schema(name):
    import gzip
    from pathlib import Path

    from tslab.gpu.profiled_tasks import task_steps
    from tslab.gpu.timeline import Timeline

    with gzip.open(Path(__file__).parent / "fixtures" / "iket" / f"{name}.job.json.gz", "rt") as fh:
        job = json.load(fh)
    kernel = "tma_copy" if name == "tma_copy" else "gemm_sm90"
    stages = {"ConsumerWait", "ProducerAcquire"} if name.endswith("waits") else None
    timeline = Timeline.from_job(kernel, task_steps(design(kernel).lower().tasks, stages), job)
    bundle = timeline._repr_mimebundle_()
    assert set(bundle) == {mime.TIMELINE, "text/plain"} and bundle["text/plain"] == timeline.text()
    _validator("timeline").validate(_saved(bundle[mime.TIMELINE]))
    capped = timeline.to_mime(max_ranges=50)
    assert len(capped["ranges"]) <= 60 and capped["shown_until_ns"] < capped["total_ns"]
    _validator("timeline").validate(_saved(capped))


def test_a_studio_output_keeps_the_design_it_shows_with_that_designs_verdict(monkeypatch):
    from tslab.widgets import Studio

    updates = []

    class Handle:
        def update(self, bundle, raw):
            updates.append(bundle)

    monkeypatch.setattr("IPython.display.display", lambda *a, **k: Handle())
    studio = Studio(design("tma_copy"), debounce=0.01)
    studio._ipython_display_()  # displayed on its own: it keeps its output current
    first = studio._repr_mimebundle_()[mime.DESIGN]
    _validator("design").validate(first)
    assert first["widget"] == "Studio" and first["verdict"]["status"] == "SAFE"
    studio.pipeline_editor.set("smem_ring", "num_stages", 5)
    studio.wait(10)
    saved = updates[-1][mime.DESIGN]
    _validator("design").validate(saved)
    assert saved["pipelines"]["smem_ring"]["num_stages"] == 5
    shown = {k: v for k, v in saved.items() if k not in ("verdict", "widget")}
    assert saved["verdict"]["design"] == shown  # the verdict is that design's, never an earlier one's
    assert "application/vnd.jupyter.widget-view+json" in updates[-1]
    count = len(updates)
    studio._views.request()
    studio.wait(1)
    assert len(updates) == count  # nothing new drawn: the output is not rewritten
    studio.close()


def test_a_static_work_queue_is_in_the_flow_with_no_stages():
    """The persistent GEMM's tasks all wait on its WorkQueue (the swimlane shows the steps); the flow draws it as the
    queue that hands them their tiles: TS's static scheduler, no pipeline and no stages. Without persistence there is
    no WorkQueue and nothing to draw."""
    persistent = tslab.check(design("gemm_sm90", persistent=True))
    assert persistent.design.schedulers() == {"work_queue": "StaticPersistent"}
    assert persistent.rings()["work_queue"] == {"num_stages": 0, "pipeline_type": "WorkQueue", "num_bytes": None,
                                                "scheduler": "StaticPersistent"}
    assert "work_queue" in set(persistent.schedule["resource"])
    assert "work_queue" not in persistent.design.pipelines()  # nothing for the pipeline editor to show
    single = tslab.check(design("gemm_sm90", persistent=False))
    assert single.design.schedulers() == {} and "work_queue" not in single.rings()
    assert tslab.check(design("gemm_sm100")).design.schedulers() == {}  # CLC: a pipeline a scheduler warp fills
