"""Export of attention_sm90 without a GPU: the design compiled and checked once per value of causal, a package that
loads without tslab and says it needs a GPU, argument checks that name the rule and the fix (on stand-in tensors:
they need neither a GPU nor torch), and unsafe designs that leave nothing behind."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import textwrap

import pytest
from package_calls import imported

from tslab.cli import main
from tslab.gpu import device
from tslab.gpu.errors import GpuError, UnsafeDesignError
from tslab.gpu.export import export
from tslab.kernels import attention_sm90

NAME = "tslab_attention_pkg"
PROBLEM = "(batch, seqlen_q, seqlen_k, heads, heads_kv)"
RULE = ("q (batch, seqlen_q, heads, 128) and k, v (batch, seqlen_k, heads_kv, 128) of one dtype, heads a multiple of "
        "heads_kv")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """``tslab export attention_sm90 -o DIR``: the default design (bf16, head_dim 128), compiled for sm_90a."""
    out = tmp_path_factory.mktemp("exports") / NAME
    assert main(["export", "attention_sm90", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def kernel(package):
    """The package imported in this process (it imports no tslab; without torch it registers no op)."""
    with imported(package) as module:
        yield module


class Stand:
    """A stand-in for a torch tensor: what the package's checks read (shape, dtype, device, strides, pointer)."""

    def __init__(self, shape, dtype="bfloat16", device="cuda:0", stride=None, ptr=0x7F0000000000):
        self.shape, self.dtype, self.device = tuple(shape), f"torch.{dtype}", device
        self.is_cuda = device.startswith("cuda")
        self._stride = stride or tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        self._ptr = ptr

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


def _args(b=2, s_q=100, s_k=50, h=8, h_kv=2, d=128, **replace):
    """q, k, v, o, lse of one problem, with any of them replaced."""
    args = {"q": Stand((b, s_q, h, d)), "k": Stand((b, s_k, h_kv, d)), "v": Stand((b, s_k, h_kv, d)),
            "o": Stand((b, s_q, h, d)), "lse": Stand((b, h, s_q), dtype="float32")}
    return {**args, **replace}


def test_the_command_says_both_verdicts_and_writes_one_object_per_causal_value(package):
    from tslab.gpu.cli import exported

    said = exported(package).splitlines()
    assert said[0] == ("exported attention_sm90 (2 designs, one per value of causal) for sm_90a; tslab.check: SAFE "
                       "(causal=False), SAFE (causal=True)")
    names = {p.name for p in package.iterdir()}
    assert {"kernel_0.o", "kernel_1.o", "design.json", "VERDICT.txt", "__init__.py", "_runtime.py",
            "test_kernel.py"} <= names
    assert "kernel.o" not in names and "kernel_2.o" not in names
    assert set(said[2:]) == {f"  {n}" for n in names if n != "__pycache__"}
    for i in range(2):  # each object holds one TVM FFI function, named by its prefix
        assert f"__tvm_ffi_kernel_{i}".encode() in (package / f"kernel_{i}.o").read_bytes()


def test_design_json_holds_both_designs_with_their_checks(package):
    meta = json.loads((package / "design.json").read_text())
    assert list(meta) == ["kernel", "kind", "arch", "dynamic", "shape", "dtype", "sms", "launch", "variants", "designs",
                          "about", "self_test", "runtime"]
    assert meta["about"]["head_dims"] == [64, 128]
    assert (meta["kernel"], meta["kind"], meta["arch"], meta["dtype"]) == ("attention_sm90", "attention", "sm_90a",
                                                                           "bfloat16")
    assert meta["dynamic"] is True and meta["shape"] is None
    assert meta["variants"] == {"param": "causal", "values": [False, True]}
    for i, (entry, causal) in enumerate(zip(meta["designs"], (False, True), strict=True)):
        assert entry["design"] == attention_sm90.design(causal=causal).to_dict()
        assert (entry["object"], entry["prefix"], entry["verdict"]) == (f"kernel_{i}.o", f"kernel_{i}", "SAFE")
        # Every K/V trip count up to 2 x kv_stages + 1 (kv_stages=4), as the kernel runs any sequence length.
        assert entry["trip_counts_checked"] == [[count, "SAFE"] for count in range(1, 10)]
        assert entry["shape_rules"] == {"names": ["batch", "seqlen_q", "seqlen_k", "heads", "heads_kv"],
                                        "min": [1] * 5, "multiple_of": [1] * 5, "text": RULE}
        # q, k, v, o: runtime batch, seqlen and heads, head_dim fixed; lse: all runtime; the scale is no tensor.
        assert entry["tensor_divisibility"] == [[1, 1, 1, None]] * 4 + [[1, 1, 1], None]
        assert entry["edits"] == {"schedules": {}, "alias_groups": None}


def test_verdict_txt_says_how_a_call_picks_then_each_verdict(package):
    text = (package / "VERDICT.txt").read_text()
    assert text.startswith("attention_sm90: 2 designs, one per value of causal (causal=False, causal=True), each "
                           "compiled into its own object; a call picks one by its causal argument.\n\n"
                           "== causal=False: design 0 (kernel_0.o) ==\nattention_sm90: SAFE\n")
    second = text.index("== causal=True: design 1 (kernel_1.o) ==\nattention_sm90: SAFE\n")
    for section in (text[:second], text[second:]):
        assert "checked at each trip count from 1 to 9 (1: SAFE, 2: SAFE," in section


def test_loads_both_objects_in_a_fresh_process_without_tslab_and_says_it_needs_a_gpu(package):
    code = textwrap.dedent(f"""
        import importlib.abc, json, sys, types
        class NoTslab(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "tslab" or name.startswith("tslab."):
                    raise ImportError("tslab is not installed here")
        sys.meta_path.insert(0, NoTslab())
        sys.path.insert(0, sys.argv[1])
        import {NAME} as kernel
        loaded = [type(kernel.load(i)).__name__ for i in range(len(kernel.DESIGNS))]
        picks = [kernel.design_for(c)["object"] for c in (False, True)]
        tensor = types.SimpleNamespace(device=types.SimpleNamespace(index=0))
        try:
            kernel.attention(tensor, tensor, tensor, causal=True)
        except kernel.ExportedKernelError as exc:
            error = str(exc)
        print(json.dumps([loaded, picks, kernel.HEAD_DIM, kernel.DTYPE, error, "tslab" in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", code, str(package.parent)], capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, picks, head_dim, dtype, error, has_tslab = json.loads(out.stdout)
    assert len(loaded) == 2 and len(set(loaded)) == 1 and not has_tslab
    assert (picks, head_dim, dtype) == (["kernel_0.o", "kernel_1.o"], 128, "bfloat16")
    if device() is None:
        assert error == (f"module '{NAME}': no NVIDIA GPU or driver is present; this module needs a GPU of arch "
                         "sm_90a to run (load() works without one)")


def test_arguments_that_fit_give_the_problem(kernel):
    args = _args()
    assert kernel.check_args(**args) == (2, 100, 50, 8, 2)
    assert kernel.check_args(args["q"], args["k"], args["v"]) == (2, 100, 50, 8, 2)
    # A size-1 mode's stride is never used, so it need not be the compact one.
    assert kernel.check_args(Stand((1, 1, 8, 128), stride=(7, 3, 128, 1)), Stand((1, 9, 8, 128)),
                             Stand((1, 9, 8, 128))) == (1, 1, 9, 8, 8)


REFUSALS = [
    ({"k": Stand((2, 50, 2, 128), dtype="float16")},
     "k: dtype float16 != bfloat16, the dtype this package was compiled for (q, k, v, o); convert it "
     "(k.to(torch.bfloat16)) or export the design again with --param dtype=fp16 for float16 tensors"),
    ({"q": Stand((2, 100, 8, 128), dtype="float32")},
     "q: dtype float32 != bfloat16, the dtype this package was compiled for (q, k, v, o); convert it "
     "(q.to(torch.bfloat16))"),
    ({"lse": Stand((2, 8, 100), dtype="bfloat16")},
     "lse: dtype bfloat16 != float32, the LSE's dtype; pass a float32 lse"),
    ({"q": Stand((2, 100, 8, 64)), "o": Stand((2, 100, 8, 64))},
     "q: shape (2, 100, 8, 64): head_dim 64 != 128, the head_dim this package was compiled for; export the design "
     "again with --param head_dim=64 for such tensors"),
    ({"v": Stand((2, 50, 2, 32))},
     "v: shape (2, 50, 2, 32): head_dim 32 != 128, the head_dim this package was compiled for; pad head_dim of q, k, "
     "v with zeros to 64, pass scale=1/sqrt(32) and keep o[..., :32] (export with --param head_dim=64 for that)"),
    ({"k": Stand((2, 50, 2, 128), stride=(12800, 128, 6400, 1))},
     "k: strides (12800, 128, 6400, 1) are not the compact row-major strides (12800, 256, 128, 1) of shape (2, 50, "
     "2, 128); the kernel reads k as one dense (batch, seqlen_k, heads_kv, head_dim) block: pass k.contiguous()"),
    ({"q": Stand((2, 100, 8, 128), stride=(3 * 102400, 3 * 1024, 128, 1))},  # q of a packed qkv tensor
     "q: strides (307200, 3072, 128, 1) are not the compact row-major strides (102400, 1024, 128, 1) of shape (2, "
     "100, 8, 128); the kernel reads q as one dense (batch, seqlen_q, heads, head_dim) block: pass q.contiguous()"),
    ({"o": Stand((2, 100, 8, 128), ptr=0x7F0000000008)},
     "o: data pointer 0x7f0000000008 is not 16-byte aligned; TMA needs 16-byte aligned tensors: pass o.clone() (a "
     "fresh tensor is aligned)"),
    ({"k": Stand((2, 50, 3, 128)), "v": Stand((2, 50, 3, 128))},
     "k: shape (2, 50, 3, 128): q's heads=8 is not a multiple of heads_kv=3; grouped-query attention shares each K/V "
     "head among the same number of query heads: give k and v a number of heads that divides q's"),
    ({"v": Stand((2, 51, 2, 128))},
     "v: shape (2, 51, 2, 128) != k's (2, 50, 2, 128); v has one row per key, (batch, seqlen_k, heads_kv, head_dim) "
     "like k"),
    ({"k": Stand((1, 50, 2, 128)), "v": Stand((1, 50, 2, 128))},
     "k: shape (1, 50, 2, 128): batch 1 != q's 2; q, k and v take one batch"),
    ({"k": Stand((2, 0, 2, 128)), "v": Stand((2, 0, 2, 128))},
     f"{PROBLEM}: shape (2, 100, 0, 8, 2): seqlen_k = 0 is below 1; this kernel takes {RULE}"),
    ({"o": Stand((2, 100, 4, 128))},
     "o: shape (2, 100, 4, 128) != (2, 100, 8, 128), the (batch, seqlen_q, heads, head_dim) of q, k, v"),
    ({"lse": Stand((2, 100, 8), dtype="float32")},
     "lse: shape (2, 100, 8) != (2, 8, 100), the (batch, heads, seqlen_q) of q, k, v"),
    ({"v": Stand((2, 50, 2, 128), device="cpu")},
     "v: on cpu; attention runs on a CUDA device: pass v.cuda()"),
    ({"lse": Stand((2, 8, 100), dtype="float32", device="cuda:1")},
     "lse: on cuda:1 but q is on cuda:0; the tensors of one call must be on one device: pass lse.to(q.device)"),
    ({"q": [[0.0]]}, "q: expected a CUDA torch.Tensor (batch, seqlen_q, heads, head_dim), got list"),
    ({"k": Stand((2, 50, 256))},
     "k: shape (2, 50, 256) has 3 dimensions; attention takes k as (batch, seqlen_k, heads_kv, head_dim)"),
]


@pytest.mark.parametrize(("replace", "message"), REFUSALS, ids=[m.split(":")[0] + str(i)
                                                                for i, (_, m) in enumerate(REFUSALS)])
def test_check_args_names_the_rule_and_the_fix(kernel, replace, message):
    with pytest.raises(kernel.ExportedInputError) as caught:
        kernel.check_args(**_args(**replace))
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, kernel.ExportedKernelError)


@pytest.mark.parametrize(("keywords", "message"), [
    ({"causal": 1}, "causal=1: expected True or False"),
    ({"scale": float("nan")}, "scale=nan: expected a finite float (None: 1/sqrt(head_dim) = 0.0883883)"),
    ({"scale": "0.1"}, "scale='0.1': expected a finite float (None: 1/sqrt(head_dim) = 0.0883883)"),
])
def test_causal_and_scale_are_checked_before_the_gpu(kernel, keywords, message):
    with pytest.raises(kernel.ExportedInputError, match=f"^{re.escape(message)}$"):
        kernel.run(**_args(), **keywords)


def test_run_without_a_gpu_says_one_is_needed(kernel):
    if device() is not None:
        pytest.skip("this machine has a GPU")
    with pytest.raises(kernel.ExportedKernelError, match=f"^module '{NAME}': no NVIDIA GPU or driver is present"):
        kernel.run(**_args(), causal=True, scale=0.1)


def test_a_retry_hands_the_kernel_compact_views_of_modes_of_extent_one(kernel):
    """A decode-style slice (the last query row of a batch of one) keeps strides its extent-1 modes never use; when
    the compiled function refuses them, the launch is retried with the compact view of the same data."""
    torch = pytest.importorskip("torch")
    q = torch.randn((1, 40, 4, 128), dtype=torch.bfloat16)[:, -1:]
    k = torch.randn((1, 40, 2, 128), dtype=torch.bfloat16)
    assert kernel.check_args(*(Stand(t.shape, device="cuda:0", stride=t.stride()) for t in (q, k, k))) == (1, 1, 40,
                                                                                                           4, 2)
    dense = kernel._dense(q)
    assert (q.stride(), dense.stride()) == ((20480, 512, 128, 1), (512, 512, 128, 1))
    assert dense.data_ptr() == q.data_ptr() and torch.equal(dense, q)
    assert kernel._dense(k) is k


def test_the_package_test_file_runs(package):
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package)],
                         capture_output=True, text=True, timeout=300, check=False, cwd=package.parent)
    assert out.returncode == 0, out.stdout[-2000:]
    if device() is None:  # loads both objects and picks by causal; the GPU checks skip here
        assert "2 passed, 11 skipped" in out.stdout


def test_an_unsafe_design_is_refused_and_nothing_is_written(tmp_path):
    out = tmp_path / "deadlock_pkg"
    # One K/V stage cannot hold K_i and V_i-1 at once, which the overlap needs: DEADLOCK.
    with pytest.raises(UnsafeDesignError, match=r"^export of 'attention_sm90': its package holds one design per "
                                                r"value of causal, and the one with causal=False is refused, so "
                                                r"nothing was written: design 'attention_sm90': tslab.check\(\) says "
                                                r"DEADLOCK"):
        export(attention_sm90.design(kv_stages=1), out)
    assert not out.exists()


def test_a_design_unsafe_at_another_trip_count_is_refused(tmp_path):
    # SAFE over the one K/V tile it is checked with, DEADLOCK from two on: the package would run any number.
    design = attention_sm90.design(kv_stages=1, schedule="cooperative", kv_tiles=1)
    with pytest.raises(UnsafeDesignError, match=r"the one with causal=False is refused, so nothing was written: with "
                                                r"kv_tiles=2 the checker says DEADLOCK; the exported kernel runs any "
                                                r"trip count, so every one up to 3 must be SAFE") as caught:
        export(design, tmp_path / "trips_pkg")
    assert caught.value.verdict.status == "DEADLOCK"
    assert not (tmp_path / "trips_pkg").exists()


def test_one_shape_is_refused_for_a_package_of_every_problem(tmp_path, capsys):
    assert main(["export", "attention_sm90", "--shape", "1x128x128x2x2", "-o", str(tmp_path / "one_pkg")]) == 1
    assert capsys.readouterr().err == (
        "tslab export: export of 'attention_sm90': shape=(1, 128, 128, 2, 2) asks for one shape, but its package is "
        "compiled once for every problem (runtime extents) with one design per value of causal; drop shape= (CLI: "
        "--shape)\n")
    with pytest.raises(GpuError, match="asks for one shape"):
        export(attention_sm90.design(), tmp_path / "one_pkg", shape=(1, 128, 128, 2, 2))
    assert not (tmp_path / "one_pkg").exists()
