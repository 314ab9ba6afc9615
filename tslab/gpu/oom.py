"""Recognise an out-of-memory failure reported by a worker, with the bytes asked and free when torch says them.

torch words it ``CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of
which 1.25 GiB is free. ...``; the CUDA driver says ``CUDA_ERROR_OUT_OF_MEMORY``.
"""

from __future__ import annotations

import re

from .errors import GpuOutOfMemoryError

_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_ASKED = re.compile(r"Tried to allocate ([\d.]+) ([KMGT]iB|B)")
_FREE = re.compile(r"([\d.]+) ([KMGT]iB|B) (?:is )?free")


def _bytes(match: re.Match[str] | None) -> int | None:
    return None if match is None else round(float(match.group(1)) * _UNITS[match.group(2)])


def _size(n: int) -> str:
    for unit in ("GiB", "MiB", "KiB"):
        if n >= _UNITS[unit]:
            return f"{n / _UNITS[unit]:.2f} {unit}"
    return f"{n} B"


def is_out_of_memory(kind: str, text: str) -> bool:
    """Whether an exception of type name ``kind`` with message ``text`` is the GPU running out of memory."""
    return kind == "OutOfMemoryError" or "CUDA_ERROR_OUT_OF_MEMORY" in text or "out of memory" in text.lower()


def out_of_memory_error(what: str, text: str) -> GpuOutOfMemoryError:
    """The error for ``what`` running out of GPU memory, with the sizes ``text`` names."""
    asked, free = _bytes(_ASKED.search(text)), _bytes(_FREE.search(text))
    sizes = [f"asked for {_size(asked)}" if asked is not None else "",
             f"{_size(free)} free" if free is not None else ""]
    detail = ", ".join(s for s in sizes if s)
    return GpuOutOfMemoryError(
        f"{what}: the GPU ran out of memory{f' ({detail})' if detail else ''}; use a smaller shape or free GPU "
        f"memory held elsewhere (other processes, torch.cuda.empty_cache()).\n--- worker message ---\n{text}",
        requested_bytes=asked,
        free_bytes=free,
    )
