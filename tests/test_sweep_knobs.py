"""A sweep over the knobs of a captured kernel: each point re-traces the kernel with its knob values."""

from __future__ import annotations

import tslab
from tests.fixtures import ring_copy
from tslab import fake


def test_knobs_of_a_captured_kernel_are_a_space():
    design = tslab.capture_file(ring_copy.__file__, "ring_copy", fake.tensor("f16", (6, 256)),
                                fake.tensor("f16", (6, 256)))
    assert "stages" in design.knobs()
    r = tslab.sweep(design, {"stages": [2, 3]}, measure="check", executor="serial", quiet=True)
    assert r.table["status"].tolist() == ["ok", "ok"]
    assert r.table["smem_bytes"].iloc[0] < r.table["smem_bytes"].iloc[1]
