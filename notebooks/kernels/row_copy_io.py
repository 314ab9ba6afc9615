"""How to call ``row_copy.copy_rows`` on the GPU, and what it must produce: tslab's GPU worker imports these.

``inputs`` returns the host function's arguments in order (a CUDA tensor for each fake tensor it was captured
with); ``expected`` returns what the written argument (``dst``) must hold; ``torch_copy`` is the baseline timed on
the same inputs. The worker imports the functions of a file like this one by name
(``"kernels/row_copy_io.py:inputs"``); tutorial 06 types the same functions into its cells, and the worker is sent
copies of those.
"""

ROWS, COLS = 1024, 8192  # the shape the kernel is captured with in tutorial 06's GPU section


def inputs():
    """A random fp16 source and an empty destination, ``ROWS x COLS``."""
    import torch

    src = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
    return src, torch.empty_like(src)


def expected(src, dst):
    """The copy must equal its source."""
    return src


def torch_copy(src, dst):
    """torch's own device-to-device copy of the same tensors."""
    dst.copy_(src)


def wrong(src, dst):
    """A reference that is not what the kernel computes (a test that a wrong result is reported)."""
    return src + 1
