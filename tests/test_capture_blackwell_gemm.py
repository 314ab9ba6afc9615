"""NVIDIA's Blackwell TS GEMM tutorials, captured, hold the same kinds of resources and pipelines as gemm_sm100.

    TSLAB_CUTLASS_SRC=path/to/cutlass     an NVIDIA/cutlass checkout (the folder holding examples/)

Skipped unless the tutorials are there. Both are traced for sm_100a on the CPU: the single-CTA GEMM
(02_gemm_simple_ts) as it is, the cluster GEMM (04_gemm_bf16_advanced_ts) with its module constant
``use_clc_dynamic_scheduler`` set to True, through a two-line wrapper file that imports it (its trace stops on
nvidia-cutlass-dsl 4.8.1 after its TaskManager is built, which is what a capture needs). Their code is read from
the checkout named, never copied here.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tslab
from tslab import fake
from tslab.capture import CaptureError, capture_file_all
from tslab.kernels import gemm_sm100

TUTORIALS = (Path(os.environ.get("TSLAB_CUTLASS_SRC", "/nonexistent")).expanduser()
             / "examples/python/CuTeDSL/experimental/task_scheduling/blackwell/tutorial")
SIMPLE = TUTORIALS / "02_gemm_simple_ts" / "01_fp16_bf16_gemm_3.py"
CLUSTER = TUTORIALS / "04_gemm_bf16_advanced_ts" / "01_fp16_bf16_gemm_3_cluster.py"
pytestmark = pytest.mark.skipif(not (SIMPLE.is_file() and CLUSTER.is_file()),
                                reason="TSLAB_CUTLASS_SRC names no NVIDIA/cutlass checkout with Blackwell tutorials")


def _captured(path: Path, *args: Any) -> Any:
    try:
        result = capture_file_all(path, "host_function", *args, arch="sm_100a", timeout=900)
    except CaptureError as exc:  # the trace stopped after the TaskManager was built
        result = exc.result
    assert len(result.managers) == 1
    return result.managers[0].design


def kinds(design: Any, *, queue: bool = True) -> set[str]:
    """The kinds of resources and pipelines a design holds: its rings' pipeline types, cluster layouts and
    CTA-leader signalling, the memory spaces TS's allocators lay out, a work queue, slot routing."""
    out = set()
    for cfg in design.pipelines().values():
        if "members" in cfg:  # a PipelineGroup's own entry: its members have theirs
            continue
        out.add(cfg["pipeline_type"])
        out.add(f"cluster {cfg['cta_layout_vmnk']}")
        out |= {f"{side} {cfg[f'{side}_signaling_threads']}" for side in ("producer", "consumer")
                if cfg[f"{side}_signaling_threads"] != "All"}
    low = design.lower()
    out |= {f"{space} allocator" for space, a in (("smem", low.smem_allocator), ("tmem", low.tmem_allocator)) if a}
    if queue and any(type(r).__name__ == "WorkQueue" for r in low.blueprint.resources().values()):
        out.add("WorkQueue")
    if any(t.slot_routing for t in low.tasks):
        out.add("slot routing")
    return out


@pytest.fixture(scope="module")
def simple():
    return _captured(SIMPLE, fake.tensor("f16", (512, 512)), fake.tensor("f16", (512, 512)),
                     fake.tensor("f16", (512, 512)), (512, 512, 512), fake.stream())


@pytest.fixture(scope="module")
def cluster_clc(tmp_path_factory):
    wrapper = tmp_path_factory.mktemp("nvidia") / "cluster_clc.py"
    wrapper.write_text(textwrap.dedent(f"""
        import importlib.util
        import sys

        spec = importlib.util.spec_from_file_location("nvidia_cluster_gemm", {str(CLUSTER)!r})
        module = importlib.util.module_from_spec(spec)
        sys.modules["nvidia_cluster_gemm"] = module
        spec.loader.exec_module(module)
        module.use_clc_dynamic_scheduler = True
        host_function = module.host_function
    """))
    return _captured(wrapper, fake.tensor("f16", (512, 256)), fake.tensor("f16", (512, 256)),
                     fake.tensor("f16", (512, 512)), (512, 512, 256), 148, fake.stream())


def test_the_single_cta_tutorial_holds_what_gemm_sm100_does_without_its_work_queue(simple):
    ours = gemm_sm100.design(scheduler="static")
    assert kinds(simple) == kinds(ours, queue=False) == {
        "TmaUmma", "UmmaAsync", "cluster [1, 1, 1, 1]", "smem allocator", "tmem allocator", "slot routing"}
    theirs = tslab.check(simple)
    assert theirs.status == tslab.check(ours).status == "SAFE"
    assert theirs.tmem_total == tslab.check(ours).tmem_total == 512


def test_the_cluster_tutorial_with_clc_holds_what_a_gemm_sm100_pair_does(cluster_clc):
    ours = gemm_sm100.design(cluster_m=2)
    assert kinds(cluster_clc) == kinds(ours) == {
        "TmaUmma", "UmmaAsync", "ClcFetchAsync", "cluster [2, 1, 1, 1]", "producer CtaLeader", "consumer CtaLeader",
        "smem allocator", "tmem allocator", "WorkQueue", "slot routing"}
    assert tslab.check(cluster_clc).status == tslab.check(ours).status == "SAFE"
    # NVIDIA's A and B rings are two resources filled by two load warps: gemm_sm100's ab_rings='merged' too
    def rings(design: Any) -> list[str]:
        return [n for n, c in design.pipelines().items() if c["pipeline_type"] == "TmaUmma" and "members" not in c]

    assert len(rings(cluster_clc)) == len(rings(gemm_sm100.design(cluster_m=2, ab_rings="merged"))) == 2
