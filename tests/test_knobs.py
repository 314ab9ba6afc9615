"""Knob edits of captured kernels: a knob edit is the kernel written with that value."""

from pathlib import Path

from tslab.capture.knobs import module_with_knobs


def test_a_knob_module_keeps_the_kernels_annotations_as_objects(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("depth = 2\n\n\ndef host(x: int, n: float = depth):\n    return n\n")
    module = module_with_knobs(Path(path), path.read_text(), {"depth": 5})
    assert module.host.__annotations__ == {"x": int, "n": float}
    assert module.host(0) == 5
