"""benchmarks/gpu_round.sh names only what exists: every candidate it times is in the dispatch's catalog, every
profile it records is one of profile_kernels' runs, every variant it passes builds a SAFE design, and the script
parses. A typo there would cost a GPU round, found only on the GPU machine."""

from __future__ import annotations

import re
import runpy
import subprocess
from pathlib import Path

from tslab import check
from tslab.kernels import attention_sm90, gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import CANDIDATES

ROUND = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_round.sh"


def _round_text() -> str:
    return ROUND.read_text()


def test_the_script_parses_and_refuses_an_unknown_round():
    subprocess.run(["bash", "-n", str(ROUND)], check=True)
    out = subprocess.run(["bash", str(ROUND), "copy"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "usage: bash benchmarks/gpu_round.sh gemm|attention" in out.stderr


def test_every_gemm_candidate_it_times_is_in_the_catalog_and_safe():
    groups = re.findall(r'"(\d+) ([a-z0-9_ ]+)"', _round_text())
    assert [int(m) for m, _ in groups] == [64, 128, 192, 256, 320, 384]
    names = [name for _, names in groups for name in names.split()]
    names += re.findall(r"--variant ([a-z0-9_]+)(?![\w=,])", _round_text())  # the large shapes' candidates
    names += re.findall(r"--design ([a-z0-9_]+)", _round_text())  # gemm_between_calls.py's packages of one design
    assert "swap_128x160_single" in names
    assert "subtiles" in names
    assert names and set(names) <= set(CANDIDATES), set(names) - set(CANDIDATES)
    for name in names:
        assert check(gemm_sm90.design(**CANDIDATES[name])).ok, name


def test_every_profile_it_records_is_a_run_of_profile_kernels():
    only = re.search(r"profile_kernels\.py .*--only ([a-z0-9_ ]+)", _round_text()).group(1).split()
    runs = runpy.run_path(str(ROUND.parent / "profile_kernels.py"))["RUNS"]
    assert only and set(only) <= {name for name, *_ in runs}


def _section(kernel: str) -> str:
    """The script's ``case`` branch of one round (``gemm)`` or ``attention)``)."""
    text = _round_text()
    start = text.index(f"  {kernel})\n")
    return text[start:text.index("\n    ;;", start)]


def _params_variants(text: str) -> list[str]:
    return re.findall(r"--(?:variant|param) ((?:\w+=\w+,?)+)", text)  # the profiles' --param too


def test_every_gemm_params_variant_it_times_builds_a_safe_design():
    read_params = runpy.run_path(str(ROUND.parent / "gemm.py"))["_params"]  # as the benchmark reads them
    variants = _params_variants(_section("gemm"))
    assert "raster_group=16" in variants
    for variant in variants:
        assert check(gemm_sm90.design(**read_params(variant.split(",")))).ok, variant


def test_every_attention_variant_it_times_builds_a_safe_design():
    variants = _params_variants(_section("attention"))
    read_params = runpy.run_path(str(ROUND.parent / "attention.py"))["_params"]  # as the benchmark reads them
    assert variants
    for variant in variants:
        assert check(attention_sm90.design(**read_params(variant.split(",")))).status == "SAFE", variant
