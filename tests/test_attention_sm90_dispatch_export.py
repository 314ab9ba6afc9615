"""Export of attention_sm90's measured dispatch without a GPU (``tslab export attention_sm90 --tuned``): seven
designs compiled and checked, picked per call by causal and then seqlen_k, and a package that says which design
each call uses before any GPU is needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from package_calls import imported

from tslab.cli import main
from tslab.gpu import device
from tslab.kernels import attention_sm90_dispatch

NAME = "tslab_attention_tuned_pkg"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """``tslab export attention_sm90 --tuned -o DIR``: bf16, head_dim 128, compiled for sm_90a."""
    out = tmp_path_factory.mktemp("exports") / NAME
    assert main(["export", "attention_sm90", "--tuned", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def kernel(package):
    with imported(package) as module:
        yield module


def test_the_command_says_each_rule_and_its_verdict(package):
    from tslab.gpu.cli import exported

    said = exported(package).splitlines()
    assert said[0] == ("exported attention_sm90 (a dispatch of 7 designs by causal and seqlen_k) for sm_90a; "
                       "tslab.check: SAFE (causal=False: seqlen_k <= 2048), SAFE (causal=False: 2049 <= seqlen_k <= "
                       "8192), SAFE (causal=False: seqlen_k >= 8193), SAFE (causal=True: seqlen_k <= 2048), "
                       "SAFE (causal=True: 2049 <= seqlen_k <= 4096), SAFE (causal=True: 4097 <= seqlen_k <= 12288), "
                       "SAFE (causal=True: seqlen_k >= 12289)")
    assert {f"kernel_{i}.o" for i in range(7)} <= {p.name for p in package.iterdir()}


def test_design_json_holds_the_rules_by_causal_and_seqlen_k(package):
    meta = json.loads((package / "design.json").read_text())
    assert meta["dispatch"] == {"key": "seqlen_k", "variant": "causal", "rules": [
        {"max_seqlen_k": 2048, "design": 0, "causal": False}, {"max_seqlen_k": 8192, "design": 1, "causal": False},
        {"max_seqlen_k": None, "design": 2, "causal": False}, {"max_seqlen_k": 2048, "design": 3, "causal": True},
        {"max_seqlen_k": 4096, "design": 4, "causal": True}, {"max_seqlen_k": 12288, "design": 5, "causal": True},
        {"max_seqlen_k": None, "design": 6, "causal": True}]}
    assert [e["design"] for e in meta["designs"]] == [d.to_dict() for d in attention_sm90_dispatch.tuned().designs]
    assert [e["verdict"] for e in meta["designs"]] == ["SAFE"] * 7
    # Each side of every bound, for each causal value, and a problem of each side among the package test's own.
    assert meta["self_test"]["picks"] == [[False, 1, 0], [False, 2048, 0], [False, 2049, 1], [False, 4096, 1],
                                          [False, 4097, 1], [False, 8192, 1], [False, 8193, 2], [False, 12288, 2],
                                          [False, 12289, 2], [True, 1, 3], [True, 2048, 3], [True, 2049, 4],
                                          [True, 4096, 4], [True, 4097, 5], [True, 8192, 5], [True, 8193, 5],
                                          [True, 12288, 5], [True, 12289, 6]]
    for seqlen in (2048, 2049, 4096, 4097, 8192, 8193, 12288, 12289):
        assert [1, seqlen, seqlen, 2, 2] in meta["self_test"]["examples"]
    assert meta["about"]["designs"].startswith("7, one per launch by causal and seqlen_k: causal=False: seqlen_k "
                                               "<= 2048 design 0; ")


def test_verdict_txt_opens_with_the_table(package):
    text = (package / "VERDICT.txt").read_text()
    assert text.startswith(attention_sm90_dispatch.tuned().text() + "\n\n== causal=False: seqlen_k <= 2048: "
                           "design 0 (kernel_0.o) ==\nattention_sm90: SAFE\n")


@pytest.mark.parametrize(("causal", "seqlen_k", "index"), [(False, 1, 0), (False, 2048, 0), (False, 2049, 1),
                                                           (False, 8192, 1), (False, 8193, 2), (False, 1 << 20, 2),
                                                           (True, 7, 3), (True, 2048, 3), (True, 2049, 4),
                                                           (True, 4096, 4), (True, 4097, 5), (True, 12288, 5),
                                                           (True, 12289, 6)])
def test_a_call_uses_the_design_its_causal_and_seqlen_k_pick(kernel, causal, seqlen_k, index):
    assert kernel.design_for(causal, seqlen_k) is kernel.DESIGNS[index]
    assert kernel._index_for(causal, seqlen_k) == index
    params = kernel.DESIGNS[index]["design"]["params"]
    assert params["causal"] is causal and params["persistent"] is (index in (0, 3, 4))
    assert params["tile_n"] == (176 if index in (2, 6) else 128)
    assert params["causal_order"] == {3: "longest_first_zigzag", 4: "longest_first"}.get(index, "by_pair")


def test_design_for_asks_for_seqlen_k_only_where_the_pick_needs_it(kernel):
    with pytest.raises(kernel.ExportedInputError, match=r"design_for\(causal=False\): this package picks by seqlen_k "
                                                        r"too \(max_seqlen_k 2048, 8192, None\): pass seqlen_k=\.\.\."):
        kernel.design_for(False)
    with pytest.raises(kernel.ExportedInputError, match=r"design_for\(causal=True\): this package picks by seqlen_k "
                                                        r"too \(max_seqlen_k 2048, 4096, 12288, None\): pass "
                                                        r"seqlen_k=\.\.\."):
        kernel.design_for(True)
    with pytest.raises(kernel.ExportedInputError, match=r"seqlen_k=0: expected a positive int"):
        kernel.design_for(False, 0)
    with pytest.raises(kernel.ExportedInputError, match=r"causal=1: expected True or False"):
        kernel.design_for(1, 5)
    assert kernel.VARIANTS == {"param": "causal", "values": [False, True]}


def test_the_package_test_file_runs(package):
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package)],
                         capture_output=True, text=True, timeout=300, check=False, cwd=package.parent)
    assert out.returncode == 0, out.stdout[-2000:]
    if device() is None:  # loads the seven objects and checks every pick; the GPU checks skip here
        assert "2 passed, 27 skipped" in out.stdout


def test_head_dim_64_picks_its_own_table(tmp_path, capsys):
    """``--param head_dim=64`` chooses the table (the three-warpgroup preset), not the head_dim 128 designs with
    head_dim changed; a head_dim without a table is refused by name."""
    from tslab.gpu.cli import _tuned

    d64 = _tuned("attention_sm90", {"head_dim": 64, "dtype": "fp16"})
    assert d64 == attention_sm90_dispatch.tuned("fp16", 64)
    assert main(["export", "attention_sm90", "--tuned", "--param", "head_dim=96", "-o", str(tmp_path / "p")]) == 1
    assert "head_dim=96 has no measured table" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
