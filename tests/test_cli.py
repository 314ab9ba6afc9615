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
    message, hint = proc.stderr.strip().splitlines()
    assert "not valid JSON" in message and hint.startswith("  hint: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["check", "tma_cop"], ["check", "tma_copy", "--param", "stages=0"],
                                  ["check", "tma_copy", "--param", "stages"], ["check", "missing.json"]])
def test_invalid_input_exits_2(capsys, args):
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("tslab: ")


def test_json_output_and_params(capsys):
    assert main(["check", "gemm_sm90", "--param", "stages=9", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "CAPACITY" and data["design"]["params"]["stages"] == 9
    # as in a saved verdict's memory: used = data + barriers (no "smem_total", which read as the used total)
    assert data["smem_used"] == data["smem_data"] + data["barrier_bytes"] > data["smem_capacity"]
    assert "smem_total" not in data


def test_design_json_file(tmp_path, capsys):
    from tslab.kernels import demo_deadlock

    path = tmp_path / "fixed.json"
    path.write_text(demo_deadlock.design().with_pipeline("smem_ring", num_stages=2).to_json())
    assert main(["check", str(path)]) == 0


def test_export_writes_a_gemm_package_for_every_shape(capsys, tmp_path):
    assert main(["export", "gemm_sm90", "-o", str(tmp_path / "gemm_pkg")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[:2] == ["exported gemm_sm90 for sm_90a; tslab.check: SAFE", f"{tmp_path / 'gemm_pkg'}/"]
    assert said[2:] == [f"  {p.name}" for p in sorted((tmp_path / "gemm_pkg").iterdir())]
    assert {"  VERDICT.txt", "  __init__.py", "  design.json", "  kernel.o", "  test_kernel.py"} <= set(said)
    assert json.loads((tmp_path / "gemm_pkg" / "design.json").read_text())["dynamic"] is True


def test_smem_capacity_option(capsys):
    assert main(["check", "demo_overflow", "--smem-capacity", "300000"]) == 0
    assert "/ 300000 B" in capsys.readouterr().out


def test_trace_as_text_and_as_json(capsys):
    assert main(["check", "demo_deadlock", "--trace"]) == 1
    out = capsys.readouterr().out
    assert "=> DEADLOCK at cursors (8, 2)" in out
    assert main(["check", "demo_deadlock", "--trace", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["trace"]["fault"]["kind"] == "deadlock"


def test_lab_starts_the_jupyterlab_of_this_python(monkeypatch, capsys, tmp_path):
    import subprocess
    import sys as _sys

    calls = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(subprocess, "call", lambda cmd, env=None: calls.append(cmd) or 0)
    assert main(["lab", "--no-browser"]) == 0
    assert calls[0][:6] == [_sys.executable, "-m", "jupyter", "lab", "tslab-tutorials", "--no-browser"]
    assert (tmp_path / "tslab-tutorials" / "00_tour.ipynb").is_file()


def test_closed_pipe_ends_quietly():
    # `tslab check NAME --json | head -1`: the reader is gone before the verdict is printed.
    proc = subprocess.Popen([sys.executable, "-m", "tslab.cli", "check", "gemm_sm90", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_hint_is_on_its_own_line(capsys):
    assert main(["check", "tma_copy", "--param", "stages=0"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "tslab: [input] kernel 'tma_copy' param 'stages': stages=0 is not a positive int",
        "  hint: give a positive int, e.g. stages=4",
    ]


def test_export_for_an_unsupported_arch_is_one_line():
    proc = run("export", "tma_copy", "--arch", "sm_80", "-o", "never_written")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "tslab export: export of 'tma_copy': arch='sm_80' is not supported; use one of sm_90a, sm_90, sm_100a, "
        "sm_103a, sm_120a (TS kernels need Hopper or newer)"
    ]


def test_compile_refuses_an_unsupported_arch():
    from tslab import gpu
    from tslab.kernels import tma_copy

    with pytest.raises(gpu.UnsupportedArchError, match=r"compile of 'tma_copy': arch='sm_80' is not supported; use"):
        gpu.compile(tma_copy.design(), arch="sm_80")


def test_strategy_picks_the_search(capsys):
    assert main(["check", "gemm_sm90", "--strategy", "ts", "--json"]) == 0
    ts = json.loads(capsys.readouterr().out)["checker"]
    assert main(["check", "gemm_sm90", "--json"]) == 0
    auto = json.loads(capsys.readouterr().out)["checker"]
    assert (ts["prover"], auto["prover"]) == ("ts", "reduced")
    assert auto["ts_states"] == ts["states_explored"] > auto["states_explored"]
    assert main(["check", "gemm_sm90", "--strategy", "reduced"]) == 0
    assert "states (reduced search)" in capsys.readouterr().out


def test_trips_from_the_command_line(capsys):
    args = ["check", "tma_copy"]
    assert main([*args, "--trips", "LoadTask=n", "--trips", "StoreTask=n", "--n", "1..3"]) == 0
    assert "trip counts: n = 1..3 (LoadTask: n, StoreTask: n): proven for these n only" in capsys.readouterr().out
    assert main([*args, "--trips", "LoadTask=n", "--trips", "StoreTask=n-1", "--n", "2,3"]) == 1
    assert "fails at n=2" in capsys.readouterr().out
    assert main([*args, "--trips", "LoadTask", "--n", "1..4"]) == 2
    assert "--trips 'LoadTask': expected TASK=FORMULA" in capsys.readouterr().err
    assert main([*args, "--trips", "LoadTask=n", "--n", "one"]) == 2
    assert "--n 'one': expected a range 1..8" in capsys.readouterr().err
