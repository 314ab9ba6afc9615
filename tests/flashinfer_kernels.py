"""FlashInfer's TS attention kernels as tslab captures them: the host code, fake arguments and stand-ins.

    TSLAB_FLASHINFER_SRC=path/to/flashinfer     a FlashInfer source tree (the folder holding flashinfer/)

Only the kernel modules under ``flashinfer/attention/prims_ts/kernels`` are imported: the package's own
``__init__`` (compiled extensions, torch) is stood in for by empty packages, and the two device queries its
launch policies make are answered for a B200 (148 SMs). Each kernel is compiled for sm_100a on the CPU with
the frontend and options FlashInfer passes (less ``--enable-tvm-ffi``, which needs the apache-tvm-ffi package
and changes only how Python calls the compiled kernel). Used by ``test_capture_flashinfer.py`` and by
``benchmarks/checker.py``; FlashInfer's code is read from the tree named, never copied here.
"""

import os
import sys
import textwrap
import types
from pathlib import Path

from tslab import fake
from tslab.capture import CaptureError, capture_file_all

ROOT = Path(os.environ.get("TSLAB_FLASHINFER_SRC", "/nonexistent")).expanduser()
PACKAGE = ROOT / "flashinfer" if (ROOT / "flashinfer").is_dir() else ROOT
KERNELS = PACKAGE / "attention" / "prims_ts" / "kernels"
ARCH = "sm_100a"
OPTIONS = "--opt-level 3"

STAND_INS = '''
import os
import sys
import types

PACKAGE = {package!r}
for name, rel in (("flashinfer", ""), ("flashinfer.attention", "attention"),
                  ("flashinfer.attention.prims_ts", "attention/prims_ts")):
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(PACKAGE, rel)]
        sys.modules[name] = module
'''

CONTEXT_KERNEL = '''
import cutlass
import cutlass.cute as cute
from cuda.bindings import driver as cuda_drv
from flashinfer.attention.prims_ts.kernels.fmha_context.fmha_kernel import FmhaTs

HEAD_DIM = 128
FMHA = FmhaTs(qk_acc_dtype=cutlass.Float32, pv_acc_dtype=cutlass.Float32, in_dtype=cutlass.Float16,
              out_dtype=cutlass.Float16, d=HEAD_DIM, is_persistent=True, is_causal=False,
              balance_causal_workload=False, is_clc_dynamic=False, head_paired=False, window_size_left=0, h_r=1,
              enable_skip_correction=True, causal_single_kv_tile=False)


@cute.jit
def context_fmha(q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, out: cute.Tensor, scale: cute.Tensor,
                 output_scale: cute.Tensor, stream: cuda_drv.CUstream, max_active_clusters: cutlass.Constexpr[int]):
    FMHA(q, k, v, out, scale, output_scale, max_active_clusters, stream)
'''


DECODE_KERNEL = '''
import cutlass
import cutlass.cute as cute
from cuda.bindings import driver as cuda_drv
from flashinfer.attention.prims_ts.kernels.fmha_decode.fmha_decode_config import FmhaDecodeConfig
from flashinfer.attention.prims_ts.kernels.fmha_decode.fmha_decode_kernel import fmha_decode_launch

Int32, Int64, Float32 = cutlass.Int32, cutlass.Int64, cutlass.Float32
BATCH, HEADS_Q, HEADS_KV, HEAD_DIM, PAGE, MAX_KV = 4, 32, 8, 128, 32, 4096


@cute.jit
def paged_decode(q: cute.Tensor, k_cache: cute.Tensor, v_cache: cute.Tensor, out: cute.Tensor,
                 seq_lens: cute.Tensor, kv_indptr: cute.Tensor, kv_indices: cute.Tensor, partial_o: cute.Tensor,
                 partial_stats: cute.Tensor, split_counter: cute.Tensor, sinks: cute.Tensor,
                 stream: cuda_drv.CUstream, cfg: cutlass.Constexpr[FmhaDecodeConfig],
                 max_active_clusters: cutlass.Constexpr[int]):
    fmha_decode_launch((Int32(BATCH), Int32(HEADS_Q), Int32(HEADS_KV), Int32(MAX_KV), Int32(HEAD_DIM)),
                       q.iterator, k_cache.iterator, v_cache.iterator, out.iterator, seq_lens.iterator,
                       cute.make_ptr(Int32, 0), Int32(BATCH), kv_indices.iterator, partial_o.iterator,
                       partial_stats.iterator, split_counter.iterator, sinks.iterator, Float32(1.0), Float32(1.0),
                       Int32(0), Int32(max_active_clusters), stream, cfg, MAX_KV, False, True, kv_indptr.iterator,
                       kv_indices.iterator, Int64(1), Int64(PAGE * HEAD_DIM * HEADS_KV),
                       Int64(PAGE * HEAD_DIM * HEADS_KV), False, False)
'''


def decode_args():
    import cutlass
    from flashinfer.attention.prims_ts.kernels.fmha_decode.fmha_decode_config import make_decode_config

    batch, heads_q, heads_kv, page, max_kv = 4, 32, 8, 32, 4096
    cfg = make_decode_config(headdim=128, seq_len_q=1, seq_len_kv=max_kv, batch_size=batch, num_heads_q=heads_q,
                             num_heads_kv=heads_kv, qkv_dtype=cutlass.Float16, o_dtype=cutlass.Float16,
                             qkv_layout="pagedKv", num_tokens_per_page=page, split_kv_mode="disabled",
                             mask_type="dense", sliding_window_causal=False, attention_window_size=0,
                             auto_tuner=True)
    pages = batch * max_kv // page
    return (fake.tensor("f16", (batch, heads_q, 128)), fake.tensor("f16", (pages, heads_kv, page, 128)),
            fake.tensor("f16", (pages, heads_kv, page, 128)), fake.tensor("f16", (batch, heads_q, 128)),
            fake.tensor("i32", (batch,), align=4), fake.tensor("i32", (batch + 1,), align=4),
            fake.tensor("i32", (pages,), align=4), fake.tensor("f16", (1 << 20,)), fake.tensor("f32", (1 << 16,)),
            fake.tensor("i32", (1024,), align=4), fake.tensor("f32", (1,), align=4), fake.stream(), cfg, 148)


MLA_KERNEL = '''
import cutlass
from flashinfer.attention.prims_ts.kernels.mla_decode.throughput_2cta.kernel import MlaDecodeTs

mla_decode = MlaDecodeTs(acc_dtype=cutlass.Float32, lse_dtype=cutlass.Float32, mma_qk_tiler_mn=(128, 128),
                         mma_pv_tiler_mn=(128, 256), max_active_clusters=74, page_size=32, is_persistent=False,
                         is_var_seq=False, is_var_split_kv=False, static_split_kv=1, static_seq_len_k=None,
                         qkv_dtype="bf16", out_dtype="bf16", rope_dim=64, num_heads=128, seq_len_q=1, batch_size=4,
                         mask_type="causal")
'''


def mla_args(heads=128, latent=512, rope=64, page=32):
    """FlashInfer's fake MLA arguments: batch, page count and page-table width are runtime sizes."""
    import cutlass

    batch, pages, columns = fake.extent(), fake.extent(), fake.extent()
    row = latent + rope
    q_stride, out_stride = (row, 1, heads * row, heads * row), (latent, 1, heads * latent, heads * latent)
    return (fake.tensor("bf16", (heads, latent, 1, batch), stride=q_stride),
            fake.tensor("bf16", (heads, rope, 1, batch), stride=q_stride),
            fake.tensor("bf16", (page, latent, pages), stride=(row, 1, page * row)),
            fake.tensor("bf16", (page, rope, pages), stride=(row, 1, page * row)),
            fake.tensor("i32", (columns, batch), stride=(1, columns)),
            fake.tensor("bf16", (heads, latent, 1, batch), stride=out_stride),
            fake.tensor("f32", (heads, 1, batch), stride=(1, heads, heads)),
            None, cutlass.Int32(1), fake.tensor("i32", (batch,)), None, None, cutlass.Float32(1.0),
            cutlass.Float32(1.0), fake.stream())


def stand_in_flashinfer() -> None:
    """Empty packages over the source tree, ``flashinfer.utils`` reduced to what the kernels import, a B200."""
    exec(STAND_INS.format(package=str(PACKAGE)), {})
    if "flashinfer.utils" not in sys.modules:
        utils = types.ModuleType("flashinfer.utils")
        utils.round_up = lambda x, y: (x + y - 1) // y * y
        sys.modules["flashinfer.utils"] = utils
    import cutlass.utils

    class HardwareInfo:
        def __init__(self, *args):
            pass

        def get_device_multiprocessor_count(self):
            return 148

        def get_max_active_clusters(self, cluster_size=1, *args):
            return 148 // int(cluster_size)

    cutlass.utils.HardwareInfo = HardwareInfo


def context_args(batch=1, seq=1024, heads=8):
    q = fake.tensor("f16", (batch, seq, heads, 128))
    return (q, fake.tensor("f16", (batch, seq, heads, 128)), fake.tensor("f16", (batch, seq, heads, 128)),
            fake.tensor("f16", (batch, seq, heads, 128)), fake.tensor("f32", (1,), align=4),
            fake.tensor("f32", (1,), align=4), fake.stream(), 148)


def capture_or_built(path, function, args, **kwargs):
    """The capture, or what was built before a trace that stopped on a call the installed DSL version lacks."""
    try:
        return capture_file_all(path, function, *args, arch=ARCH, timeout=1200, **kwargs)
    except CaptureError as exc:
        assert "written for another CuTe DSL version" in str(exc), str(exc)
        assert exc.result is not None
        return exc.result


def write_kernel(folder: Path, name: str, body: str) -> Path:
    """A kernel file in ``folder``: the stand-in packages, then ``body``."""
    path = Path(folder) / f"{name}.py"
    path.write_text(STAND_INS.format(package=str(PACKAGE)) + textwrap.dedent(body))
    return path


#: The trip counts each task of the context kernel runs for ``n`` K/V tiles (FlashInfer's N and N-1 domains).
CONTEXT_TRIPS = {"LoadTask": "n", "Softmax0Task": "n", "Softmax1Task": "n", "EpilogueTask": "n",
                 "MmaTask": "n-1", "CorrectionTask": "n-1"}


def capture_context(folder: Path):
    """The context FMHA kernel captured as FlashInfer compiles it."""
    import cutlass.cute as cute

    path = write_kernel(folder, "context_fmha", CONTEXT_KERNEL)
    return capture_file_all(path, "context_fmha", *context_args(), arch=ARCH, frontend=cute.FrontendNext,
                            options=OPTIONS, timeout=1200)


def capture_decode(folder: Path):
    """The paged decode kernel's TaskManager (its trace stops after it on this DSL version)."""
    stand_in_flashinfer()
    path = write_kernel(folder, "paged_decode", DECODE_KERNEL)
    return capture_or_built(path, "paged_decode", decode_args(), options=OPTIONS)
