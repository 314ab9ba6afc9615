"""What GPU is here: name, architecture, multiprocessors, memory, through cuda-python's driver API."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU as the driver reports it; ``peak_gbps`` is the datasheet bandwidth the memory clock implies."""

    index: int
    name: str
    arch: str
    sm_count: int
    smem_per_block_optin: int
    l2_bytes: int
    memory_clock_khz: int
    bus_width_bits: int
    total_memory: int

    @property
    def peak_gbps(self) -> float:
        """DDR bandwidth from memory clock and bus width (2 transfers per clock), GB/s."""
        return 2 * self.memory_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "peak_gbps": round(self.peak_gbps, 1)}

    def __str__(self) -> str:
        return (
            f"{self.name} ({self.arch}, {self.sm_count} SMs, {self.total_memory / 2**30:.0f} GiB, "
            f"L2 {self.l2_bytes / 2**20:.0f} MiB, {self.smem_per_block_optin // 1024} KiB SMEM/block, "
            f"datasheet {self.peak_gbps:.0f} GB/s)"
        )


def arch_name(major: int, minor: int) -> str:
    """``sm_90a`` for Hopper, ``sm_100a`` for Blackwell datacenter parts, ``sm_XY`` otherwise."""
    suffix = "a" if (major, minor) in {(9, 0), (10, 0), (10, 3)} else ""
    return f"sm_{major}{minor}{suffix}"


def smem_capacity() -> int | None:
    """The attached GPU's opt-in SMEM per block in bytes (what TS's capacity check should use), or None."""
    info = device()
    return info.smem_per_block_optin if info is not None and info.smem_per_block_optin > 0 else None


def device(index: int = 0) -> DeviceInfo | None:
    """The GPU ``index`` as :class:`DeviceInfo`, or ``None`` where there is no driver or no such GPU."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return None
    try:
        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        err, count = cu.cuDeviceGetCount()
        if err != cu.CUresult.CUDA_SUCCESS or index >= count:
            return None
        err, dev = cu.cuDeviceGet(index)
        attr = cu.CUdevice_attribute

        def get(name: str) -> int:
            e, value = cu.cuDeviceGetAttribute(getattr(attr, name), dev)
            return int(value) if e == cu.CUresult.CUDA_SUCCESS else 0

        _, raw = cu.cuDeviceGetName(256, dev)
        _, total = cu.cuDeviceTotalMem(dev)
    except Exception:  # a broken driver install reads as "no GPU", never as a crash
        return None
    major = get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
    minor = get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
    return DeviceInfo(
        index=index,
        name=raw.split(b"\0", 1)[0].decode(),
        arch=arch_name(major, minor),
        sm_count=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        smem_per_block_optin=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        l2_bytes=get("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
        memory_clock_khz=get("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
        bus_width_bits=get("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH"),
        total_memory=int(total),
    )
