"""Fake kernel arguments and the torch stand-in."""

import sys

import cutlass
import pytest

import tslab
from tslab import fake


def test_dtype_spellings():
    assert fake.dtype("f16") is cutlass.Float16
    assert fake.dtype("bfloat16") is cutlass.BFloat16
    assert fake.dtype("Int32") is cutlass.Int32
    assert fake.dtype(cutlass.Float32) is cutlass.Float32


def test_unknown_dtype_guesses():
    with pytest.raises(tslab.TslabError, match="dtype='flaot16' is not a known element type; did you mean "):
        fake.dtype("flaot16")


def test_tensor_shapes_and_strides():
    t = fake.tensor("f16", (64, 128))
    assert tuple(t.shape) == (64, 128)
    assert tuple(t.stride) == (128, 1)
    assert tuple(fake.tensor("f32", (4, 8), stride_order=(0, 1)).stride) == (1, 4)
    assert tuple(fake.tensor("i32", (4, 8), stride=(16, 1)).stride) == (16, 1)
    with pytest.raises(tslab.TslabError, match="give one stride per mode"):
        fake.tensor("f16", (4, 8), stride=(1,))
    with pytest.raises(tslab.TslabError, match="positive sizes"):
        fake.tensor("f16", (0, 8))


def test_runtime_sizes_and_strides():
    batch, heads, dim = fake.tensor("f16", (None, 8, 128)).shape
    assert (heads, dim) == (8, 128) and not isinstance(batch, int)
    rows = fake.extent()
    table = fake.tensor("i32", (rows, 4), stride=(1, rows))
    assert table.shape[0] is rows and table.stride[1] is rows
    row_stride, _ = fake.tensor("f16", (4, 8), stride=(None, 1)).stride
    assert not isinstance(row_stride, int)


def test_a_runtime_size_is_saved_as_null():
    from tslab.capture.source import arg_from_spec, arg_spec

    spec = arg_spec(fake.tensor("f16", (None, 8)))
    assert spec == {"tensor": "Float16", "shape": [None, 8], "stride": [8, 1]}
    assert arg_spec(arg_from_spec(spec)) == spec


def test_stream():
    assert fake.stream() is not None


def test_torch_stand_in():
    with fake.torch_stand_in() as standing_in:
        if not standing_in:
            pytest.skip("torch is installed: no stand-in needed")
        import torch

        assert torch.tslab_stand_in
        assert torch.cuda.is_available() is False
        assert fake.dtype(torch.float16) is cutlass.Float16
        with pytest.raises(tslab.TslabError, match=r"torch\.randn\(\) needs the real torch"):
            torch.randn(4)
    assert "torch" not in sys.modules
