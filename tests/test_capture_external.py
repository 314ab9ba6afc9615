"""Capture a TS kernel file tslab did not write, named by the environment (skipped when it is not set).

    TSLAB_EXTERNAL_KERNEL=path/to/kernel.py        the file
    TSLAB_EXTERNAL_FUNCTION=host_fn                its host function (default: tma_copy_kernel_host)
    TSLAB_EXTERNAL_ARGS="(256,512);f16[256,512];f16[256,512];false"   --arg specs, ';'-separated
    TSLAB_EXTERNAL_ARCH=sm_90a
"""

import os

import pytest

import tslab
from tslab.capture.cli import capture_target_all
from tslab.capture.ts_report import result_word

KERNEL = os.environ.get("TSLAB_EXTERNAL_KERNEL", "")
pytestmark = pytest.mark.skipif(not os.path.isfile(KERNEL), reason="TSLAB_EXTERNAL_KERNEL names no file")


@pytest.fixture(scope="module")
def captured():
    function = os.environ.get("TSLAB_EXTERNAL_FUNCTION", "tma_copy_kernel_host")
    specs = os.environ.get("TSLAB_EXTERNAL_ARGS", "(256,512);f16[256,512];f16[256,512];false").split(";")
    return capture_target_all(f"{KERNEL}::{function}", specs, arch=os.environ.get("TSLAB_EXTERNAL_ARCH", "sm_90a"))


def test_every_task_manager_rechecks_as_ts_printed_it(captured):
    assert captured.designs
    for manager in captured.managers:
        verdict = tslab.check(manager.design)
        agreement = manager.agreement(verdict)
        assert agreement and all(agreement.values()), agreement
        printed = result_word(manager.report)
        assert (printed == "SAFE") == verdict.checker.is_safe
        print(verdict.text())
        print(verdict.schedule.to_string())
        print(verdict.layout.to_string())
