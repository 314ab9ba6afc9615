"""A stand-in for a torch tensor with what an exported package reads of one (shape, dtype, device, strides, data
pointer, contiguity), so its checks run without torch or a GPU; the compiled TVM FFI function refuses it as
no tensor at all, which drives the package's own checks on that path too."""

from __future__ import annotations

import math


class Size(tuple):
    """torch.Size's part a package uses: a tuple compared with tuples."""


class StandIn:
    def __init__(self, shape, dtype="float16", device="cuda:0", stride=None, ptr=0x7F0000000000):
        self.shape = Size(shape)
        self.dtype = f"torch.{dtype}"
        self.device = device
        self.is_cuda = device.startswith("cuda")
        self._stride = tuple(stride or (math.prod(self.shape[i + 1:]) for i in range(len(self.shape))))
        self._ptr = ptr

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr

    def dim(self):
        return len(self.shape)

    def get_device(self):
        return int(self.device.partition(":")[2] or 0) if self.is_cuda else -1

    def is_contiguous(self):
        compact = tuple(math.prod(self.shape[i + 1:]) for i in range(len(self.shape)))
        return all(n == 1 or s == c for n, s, c in zip(self.shape, self._stride, compact, strict=False))

    def new_empty(self, shape, dtype=None):
        return StandIn(shape, self.dtype.removeprefix("torch.") if dtype is None else str(dtype).removeprefix("torch."),
                       self.device)
