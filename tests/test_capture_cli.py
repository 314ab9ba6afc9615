"""``PATH.py::FUNCTION`` targets and the ``--arg`` syntax."""

import argparse

import cutlass
import pytest
from fixtures import ring_copy

import tslab
from tslab.capture.cli import add_arguments, capture_target, is_target, parse_arg, parse_args, parse_target


def test_parse_target():
    path, fn = parse_target(f"{ring_copy.__file__}::ring_copy")
    assert path.name == "ring_copy.py" and fn == "ring_copy"
    with pytest.raises(tslab.TslabError, match=r"expected PATH\.py::FUNCTION"):
        parse_target("ring_copy.py")
    with pytest.raises(tslab.TslabError, match="does not exist"):
        parse_target("missing.py::host")
    assert is_target("k.py::host") and not is_target("tma_copy")


def test_parse_arg_values():
    t = parse_arg("f16[1024,512]")
    assert tuple(t.shape) == (1024, 512) and t.element_type is cutlass.Float16
    assert tuple(parse_arg("f32[4,8]@colmajor").stride) == (1, 4)
    assert parse_arg("stream") is not None
    assert parse_arg("128") == 128 and parse_arg("2.5") == 2.5
    assert parse_arg("true") is True and parse_arg("none") is None
    assert parse_arg("(256,512)") == (256, 512)
    assert parse_arg("'abc'") == "abc"
    with pytest.raises(tslab.TslabError, match="not understood"):
        parse_arg("f16(3)")


def test_parse_args_keywords_last():
    args, kwargs = parse_args(["f16[8]", "stages=3"])
    assert len(args) == 1 and kwargs == {"stages": 3}
    with pytest.raises(tslab.TslabError, match="put keywords last"):
        parse_args(["stages=3", "f16[8]"])


def test_add_arguments():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ns = parser.parse_args(["--arg", "f16[8,128]", "--arg", "stream", "--arch", "sm_100a"])
    assert ns.arg == ["f16[8,128]", "stream"] and ns.arch == "sm_100a"


def test_capture_target():
    design = capture_target(f"{ring_copy.__file__}::ring_copy", ["f16[4,256]", "f16[4,256]", "2"])
    assert design.kernel == "ring_copy"
    assert tslab.check(design).ok


def test_tslab_check_on_a_kernel_file(capsys):
    from tslab.cli import main

    code = main(["check", f"{ring_copy.__file__}::ring_copy", "--arg", "f16[4,256]", "--arg", "f16[4,256]",
                 "--arg", "2"])
    assert code == 0
    assert "ring_copy: SAFE" in capsys.readouterr().out


def test_tslab_check_on_a_missing_kernel_file_exits_2(capsys):
    from tslab.cli import main

    assert main(["check", "nowhere.py::host"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_knob_values_parse_and_name_their_option():
    from tslab.capture.cli import parse_knobs
    from tslab.errors import TslabError

    assert parse_knobs(["ring_stages=3", "store_via=smem_o", "name='x y'", "dtype=cutlass.Float16"]) == \
        {"ring_stages": 3, "store_via": "smem_o", "name": "x y", "dtype": "cutlass.Float16"}
    with pytest.raises(TslabError, match=r"--knob '1\+': not understood"):
        parse_knobs(["stages=1+"])


def test_a_failed_trace_names_the_command_lines_frontend_and_options_flags(tmp_path, capsys):
    from tslab.cli import main

    kernel = tmp_path / "fails.py"
    kernel.write_text("import cutlass.cute as cute\n\n\n@cute.jit\ndef host(dst: cute.Tensor):\n"
                      "    raise ValueError('tile size 96 does not divide the row length')\n")
    assert main(["check", f"{kernel}::host", "--arg", "f16[64]"]) == 2
    err = capsys.readouterr().err
    assert "pass frontend=cute.FrontendNext and options=... to capture (command line: --frontend FrontendNext " \
           "--options '...')" in err


def test_check_and_export_compile_a_kernel_file_with_its_authors_frontend_and_options(capsys):
    from cutlass import cute

    from tslab.cli import build_parser, main
    from tslab.design_loading import load_design

    target = f"{ring_copy.__file__}::ring_copy"
    design = load_design(target, [], args=["f16[4,256]", "f16[4,256]", "2"], frontend="FrontendNext",
                         options="--opt-level 2")
    assert design.source.frontend is cute.FrontendNext and design.source.options == "--opt-level 2"
    for command in (["check", target], ["export", target, "-o", "pkg"]):
        args = build_parser().parse_args([*command, "--frontend", "cute.FrontendNext", "--options", "--opt-level 2"])
        assert (args.frontend, args.options) == ("cute.FrontendNext", "--opt-level 2")
    assert main(["check", target, "--arg", "f16[4,256]", "--arg", "f16[4,256]", "--arg", "2",
                 "--frontend", "FrontendNext", "--options=--opt-level 2"]) == 0
    assert "ring_copy: SAFE" in capsys.readouterr().out
    assert main(["check", target, "--frontend", "Next"]) == 2
    assert "--frontend 'Next': not a frontend of this CuTe DSL version; valid names are: 'FrontendNext'" in \
        capsys.readouterr().err
    assert main(["check", "tma_copy", "--options=--opt-level 2"]) == 2
    assert "design 'tma_copy': --options applies to a kernel.py::host_fn target" in capsys.readouterr().err
    assert main(["export", "tma_copy", "-o", "tma_pkg", "--frontend", "FrontendNext"]) == 1
    assert "export of 'tma_copy': --frontend applies to a kernel.py::host_fn target" in capsys.readouterr().err
