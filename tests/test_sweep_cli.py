"""``tslab sweep``: the table on stdout, CSV out, resume through --store, one-line errors."""

import pandas as pd

from tslab.cli import main


def test_sweep_command_writes_the_table_and_resumes(tmp_path, capsys):
    store, csv = tmp_path / "sweep.jsonl", tmp_path / "out.csv"
    argv = ["sweep", "tma_copy", "--space", "stages=2,8", "--space", "tile_cols=128,256", "--measure", "check",
            "--executor", "serial", "--store", str(store), "--csv", str(csv), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 points; 3 ok; 1 pruned; pruned: 1 capacity" in out
    table = pd.read_csv(csv)
    assert table[["stages", "tile_cols", "status"]].values.tolist() == [
        [2, 128, "ok"], [2, 256, "ok"], [8, 128, "ok"], [8, 256, "pruned"]]
    assert main(argv) == 0
    assert "4 already in the store" in capsys.readouterr().out


def test_a_bad_space_is_one_line(capsys):
    assert main(["sweep", "tma_copy", "--space", "stagez=2", "--measure", "check", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tslab: sweep space 'stagez': not a parameter") and "did you mean 'stages'" in err


def test_a_bench_sweep_without_a_gpu_suggests_the_measures_that_work_here(monkeypatch, capsys):
    import importlib

    monkeypatch.setattr(importlib.import_module("tslab.gpu.device"), "device", lambda index=0: None)
    assert main(["sweep", "tma_copy", "--space", "stages=2,3", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "tslab: sweep --measure bench (the default) runs and times each point: no NVIDIA GPU or driver on this "
        "machine; pass --measure compile (PTX, registers and spills of each point, no GPU needed) or --measure check "
        "(TS's checks only)\n")
