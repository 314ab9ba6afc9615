import json
import subprocess
import sys

import pytest

from tslab.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "tslab.cli", *args], capture_output=True, text=True, timeout=120)


def test_list_prints_the_catalog(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "tma_copy" in out and "demo_race" in out


@pytest.mark.parametrize(("name", "code", "needle"), [
    ("tma_copy", 0, "SAFE"),
    ("demo_deadlock", 1, "LoadTask blocked on smem_ring.ProducerAcquire"),
    ("demo_race", 1, "MidTask writes stage_b while LoadTask prod stage_a (smem[0:16384])"),
    ("demo_overflow", 1, "262272 B"),
])
def test_check_exit_codes_and_messages(capsys, name, code, needle):
    assert main(["check", name]) == code
    assert needle in capsys.readouterr().out


def test_malformed_design_exits_2_with_one_line_and_no_traceback():
    proc = run("check", '{"kernel": ')
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr and "not valid JSON" in proc.stderr


@pytest.mark.parametrize("args", [["check", "tma_cop"], ["check", "tma_copy", "--param", "stages=0"],
                                  ["check", "tma_copy", "--param", "stages"], ["check", "missing.json"]])
def test_invalid_input_exits_2(capsys, args):
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("tslab: ")


def test_json_output_and_params(capsys):
    assert main(["check", "gemm_sm90", "--param", "stages=9", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "CAPACITY" and data["design"]["params"]["stages"] == 9


def test_design_json_file(tmp_path, capsys):
    from tslab.kernels import demo_deadlock

    path = tmp_path / "fixed.json"
    path.write_text(demo_deadlock.design().with_pipeline("smem_ring", num_stages=2).to_json())
    assert main(["check", str(path)]) == 0


def test_export_refuses_the_gemm_design_with_the_reason(capsys):
    assert main(["export", "gemm_sm90", "-o", "unused"]) == 1
    assert "the GEMM package (run(a, b, c) for any shape) is not built yet" in capsys.readouterr().err


def test_smem_capacity_option(capsys):
    assert main(["check", "demo_overflow", "--smem-capacity", "300000"]) == 0
    assert "/ 300000 B" in capsys.readouterr().out


def test_trace_as_text_and_as_json(capsys):
    assert main(["check", "demo_deadlock", "--trace"]) == 1
    out = capsys.readouterr().out
    assert "=> DEADLOCK at cursors (7, 1)" in out
    assert main(["check", "demo_deadlock", "--trace", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["trace"]["fault"]["kind"] == "deadlock"


def test_lab_starts_the_jupyterlab_of_this_python(monkeypatch, capsys):
    import subprocess
    import sys as _sys

    calls = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env=None: calls.append(cmd) or 0)
    assert main(["lab"]) == 0
    assert calls[0][:4] == [_sys.executable, "-m", "jupyter", "lab"]
    assert calls[0][4].endswith("notebooks")
