"""Every param a design is checked with reaches the GPU kernel that runs it.

``launch_constants`` picks the params the compiled kernel is specialised on. A param the checker sees but the launch
leaves out would let tslab prove one schedule and run another (the default's), so each kernel's params, but the
CPU check's trip count, must be among them, and changing one must change them.
"""

from __future__ import annotations

import pytest

from tslab.kernels import kernel_module, kernel_rules, launch_module

KERNELS = ["gemm_sm90", "gemm_sm100", "attention_sm90"]


def _constants(name: str, params: dict) -> dict:
    consts, _pipelines = launch_module(name).launch_constants(params, {}, 132)
    return dict(consts)


@pytest.mark.parametrize("name", KERNELS)
def test_every_param_but_the_trip_count_reaches_the_launch(name):
    params = dict(kernel_module(name).PARAMS)
    missing = set(params) - {kernel_rules(name).trip_param} - set(_constants(name, params))
    assert not missing, f"{name}'s launch drops {sorted(missing)}: add them to its launch_constants"


FLAGS = [(name, key) for name in KERNELS for key, value in kernel_module(name).PARAMS.items()
         if isinstance(value, bool)]


#: The params a flag is valid only beside (the design refuses it alone, naming them).
COMPANIONS = {("attention_sm90", "snake_rounds"): {"persistent": True, "causal_order": "longest_first"}}


@pytest.mark.parametrize(("name", "key"), FLAGS)
def test_a_flipped_flag_reaches_the_launch(name, key):
    params = {**kernel_module(name).PARAMS, **COMPANIONS.get((name, key), {})}
    assert _constants(name, {**params, key: not params[key]})[key] is (not params[key])
