"""Files the commands write and what their messages show (issue 23, finding 8).

* absurd sizes are refused before anything is simulated, allocated or written, with the estimate;
* an output is complete or absent: an error or Ctrl-C mid-write leaves no partial file, and a
  previous complete file in place;
* no value of a confidential record appears in an error message.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.release.draws import SimulatedDraws


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_absurd_simulation_sizes_are_refused_before_anything_is_written(tmp_path, capsys):
    """Before: `dpinfer simulate covid --draws 1e12` wrote 2.3 GB in 60 s and left the partial
    file. Now: refused at once (exit 2) with the estimated size, nothing written."""
    out = tmp_path / "sims.npz"
    start = time.monotonic()
    assert main(["simulate", "covid", "--draws", "1e12", "--out", str(out)]) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert "GiB" in err and "nothing was written" in err and "--draws" in err and err.count("\n") == 1
    assert _listing(tmp_path) == []
    # a size that fits is accepted, written whole, and "1e3" reads as 1000
    assert main(["simulate", "covid", "--draws", "1e3", "--out", str(out)]) == 0
    with np.load(out) as f:
        assert f["sims"].shape[0] == 1000 and f["theta"].shape[0] == 1000
    assert _listing(tmp_path) == ["sims.npz"]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_simulation_leaves_the_previous_file_and_no_partial_one(tmp_path, monkeypatch,
                                                                               interrupt):
    """Ctrl-C (or an error) in the middle of the stream: the temporary file beside --out is removed
    and the complete file written before stays byte for byte."""
    out = tmp_path / "sims.npz"
    assert main(["simulate", "covid", "--draws", "600", "--batch-size", "100", "--out", str(out)]) == 0
    before = out.read_bytes()
    batch = SimulatedDraws.batch
    seen = []

    def stop_at_the_third(self, k):
        seen.append(k)
        if k == 2:
            assert any(p.name.endswith(".partial") for p in tmp_path.iterdir())  # being written beside
            raise interrupt("stopped mid-stream")
        return batch(self, k)

    monkeypatch.setattr(SimulatedDraws, "batch", stop_at_the_third)
    args = ["simulate", "covid", "--draws", "600", "--batch-size", "100", "--seed", "9", "--out", str(out)]
    if interrupt is KeyboardInterrupt:  # Ctrl-C: exit 130 with one line, nothing written
        assert main(args) == 130
    else:
        with pytest.raises(RuntimeError):
            main(args)
    assert seen == [0, 1, 2]
    assert _listing(tmp_path) == ["sims.npz"] and out.read_bytes() == before


def test_the_release_file_is_written_whole(tmp_path, monkeypatch):
    """`dpinfer release --out` goes through the same atomic writer: a failure while writing leaves
    no file (and no partial one)."""
    import dpinfer.cli.common as common

    data = tmp_path / "x.csv"
    data.write_text("x\n" + "\n".join(f"{v:.3f}" for v in np.linspace(-1, 1, 30)) + "\n")
    out = tmp_path / "rel.json"

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(common.os, "replace", broken_replace)
    argv = ["release", "--model", "gaussian-mean", "--data", str(data), "--epsilon", "1",
            "--model-args", '{"clamp": [-2, 2]}', "--no-ledger", "--out", str(out)]
    with pytest.raises(OSError, match="disk full"):
        main(argv)
    assert _listing(tmp_path) == ["x.csv"]
    monkeypatch.undo()
    assert main(argv) == 0 and _listing(tmp_path) == ["rel.json", "x.csv"]


SECRET = "731.0429e"  # a malformed value of one confidential record


@pytest.mark.parametrize("command", ["release", "abcdp", "synthesize"])
def test_no_record_value_appears_in_an_error(tmp_path, capsys, command):
    """Before: `dpinfer release` and `dpinfer abcdp` echoed the malformed cell ('731.0429e' is not
    a number). Now the message names file, line and column only."""
    data = tmp_path / "records.csv"
    data.write_text(f"x\n0.5\n{SECRET}\n0.25\n")
    if command == "release":
        argv = ["release", "--model", "gaussian-mean", "--data", str(data), "--epsilon", "1",
                "--model-args", '{"clamp": [-2, 2]}', "--no-ledger", "--out", str(tmp_path / "r.json")]
    elif command == "abcdp":
        sims = tmp_path / "sims.npz"
        np.savez(sims, theta=np.zeros((5, 1)), sims=np.zeros((5, 3, 1)))
        argv = ["abcdp", "--observed", str(data), "--simulations", str(sims), "-c", "1", "--epsilon", "1",
                "--epsilon-abc", "0.5", "--distance", "exact", "--bandwidth", "1", "--no-ledger",
                "--no-progress", "--out", str(tmp_path / "r.json")]
    else:
        from dpinfer.cli.synthesize import read_covariates

        with pytest.raises(Exception) as exc:
            read_covariates(str(data), 1, None)
        assert "line 3" in str(exc.value) and SECRET not in str(exc.value)
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and SECRET not in err and "not a number" in err


def test_ctrl_c_is_one_line_and_exit_130_for_every_command(capsys, tmp_path):
    """Ctrl-C in any command: exit status 130, one line saying what was kept, no traceback."""
    import argparse

    from dpinfer.cli.common import INTERRUPTED, run_command

    def interrupted(args):
        raise KeyboardInterrupt

    args = argparse.Namespace(out=str(tmp_path / "fit.json"), runs="runs.db")
    assert run_command(interrupted, args) == INTERRUPTED == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "interrupted (Ctrl-C)" in err and "fit.json was not written" in err and "--resume" in err
    assert not (tmp_path / "fit.json").exists()
