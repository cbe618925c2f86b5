"""coursekit.gpu_recording: the dry run, the loader that refuses it, and the pictures of a recording.

No GPU recording is committed with the course yet, so the pictures are checked on a recording built here,
in the test, with numbers that are plainly made up (its device is called "SYNTHETIC ..."); it is never
written anywhere but a temporary folder.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import subprocess
import sys

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from coursekit import gpu_recording  # noqa: E402
from coursekit.notebooks import ROOT  # noqa: E402

SYNTHETIC_DEVICE = "SYNTHETIC TEST DEVICE (made-up numbers, not a measurement)"
CUDA_ONLY = {  # measurement -> what a dry run must have skipped
    "async_timing": ["ms_events"],
    "training_memory": ["allocator", "empty_cache"],
    "out_of_memory": ["out_of_memory"],
    "pinned_transfer": ["pinned", "pinned_non_blocking", "d2h_read_before_sync"],
}


@pytest.fixture(scope="module")
def dry_run_file(tmp_path_factory):
    """The command line's dry run, written into a temporary folder."""
    out = tmp_path_factory.mktemp("recording") / "dry.json"
    done = subprocess.run([sys.executable, "-m", "coursekit.gpu_recording", "--dry-run", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "dry run" in done.stdout and done.stderr == ""
    return out


def test_dry_run_writes_every_field_and_is_marked(dry_run_file):
    data = json.loads(dry_run_file.read_text())
    assert data["dry_run"] is True
    assert data["format"] == gpu_recording.FORMAT_VERSION
    assert "dry run" in data["device"]
    assert data["torch"] == torch.__version__ and data["cuda"] == torch.version.cuda
    datetime.date.fromisoformat(data["date"])
    assert data["sizes"] == gpu_recording.DRY_RUN_SIZES
    assert sorted(data["measurements"]) == sorted(gpu_recording.MEASUREMENTS)
    for field in gpu_recording.REQUIRED_FIELDS:
        assert field in data


def test_dry_run_runs_the_cpu_parts_and_records_what_it_skipped(dry_run_file):
    measured = json.loads(dry_run_file.read_text())["measurements"]
    sizes = gpu_recording.DRY_RUN_SIZES
    for name, skipped in CUDA_ONLY.items():
        for what in skipped:
            reason = measured[name]["skipped"][what]
            assert "dry run" in reason and "CUDA" in reason, reason
    timing = measured["async_timing"]
    assert len(timing["ms_synchronized"]) == len(timing["ms_launch_only"]) == sizes["timed_steps"]
    assert timing["ms_events"] is None
    assert measured["host_sync_cost"]["ms_per_step_item_every_step"] > 0
    assert measured["host_sync_cost"]["skipped"] == {}
    phases = measured["training_memory"]["phases"]
    assert [p["phase"] for p in phases][:3] == ["start", "model on device", "batch on device"]
    assert all(p["allocated"] is None for p in phases)  # CPU: no allocator numbers, and none invented
    assert measured["pinned_transfer"]["pageable"]["gb_per_s"] > 0
    assert measured["pinned_transfer"]["pinned"] is None


def test_loader_refuses_a_dry_run(dry_run_file):
    with pytest.raises(gpu_recording.NotARecording, match="dry run"):
        gpu_recording.load_recording(dry_run_file)
    with pytest.raises(gpu_recording.NotARecording, match="dry run"):
        gpu_recording.find_recording(dry_run_file)


def test_no_recording_means_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert gpu_recording.find_recording(tmp_path / "absent.json") is None
    assert gpu_recording.RECORD_COMMAND in gpu_recording.NO_RECORDING


def test_a_committed_recording_is_a_real_one():
    """Whatever ships next to the notebook must load as a GPU recording (never a dry run)."""
    if not gpu_recording.COURSE_COPY.exists():
        pytest.skip(f"no recording committed yet ({gpu_recording.COURSE_COPY.name} absent)")
    recording = gpu_recording.load_recording(gpu_recording.COURSE_COPY)
    assert recording.data["dry_run"] is False and not recording.live


def test_record_needs_a_gpu_unless_dry_run():
    with pytest.raises(ValueError, match="dry_run"):
        gpu_recording.record("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the command would record")
def test_command_line_without_gpu_refuses_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "rec.json"
    assert gpu_recording.main(["--out", str(out)]) == 2
    assert not out.exists()
    assert "--dry-run" in capsys.readouterr().err


def _synthetic_recording() -> dict:
    """A complete recording with made-up numbers, shaped exactly like one the GPU code writes."""
    sizes = gpu_recording.FULL_SIZES
    steps = sizes["timed_steps"]
    gib, mib = 2**30, 2**20
    phases = ["start", "model on device", "batch on device"] + [
        f"step {s}: {p}" for s in (1, 2) for p in ("forward", "backward", "optimizer.step", "zero_grad")
    ] + ["references dropped", "empty_cache"]
    memory = [{"phase": name, "allocated": (k % 5) * 100 * mib, "reserved": 600 * mib, "peak": (k % 5) * 120 * mib}
              for k, name in enumerate(phases)]
    oom_phases = ["start", "inside except", "empty_cache inside except", "after except, exception kept",
                  "exception dropped", "empty_cache", "retry of the failed allocation", "retry freed, empty_cache"]
    copy_stats = {"ms_total": 10.0, "ms_until_call_returned": 1.0, "gb_per_s": 25.0}
    return {
        "format": gpu_recording.FORMAT_VERSION, "dry_run": False, "device": SYNTHETIC_DEVICE,
        "device_memory_gib": 80.0, "compute_capability": "0.0", "torch": torch.__version__, "cuda": "0.0",
        "cudnn": None, "python": "3", "date": "2000-01-01", "made_by": "tests/test_gpu_recording.py",
        "sizes": sizes,
        "measurements": {
            "async_timing": {"step": "synthetic", "flop_per_step": 10**12, "ms_synchronized": [100.0] + [10.0] * (steps - 1),
                             "ms_launch_only": [0.05] * steps, "ms_events": [9.5] * steps, "loop_ms_without_sync": 1.0,
                             "wait_ms_at_final_sync": 199.0, "skipped": {}},
            "host_sync_cost": {"steps": 200, "model": "synthetic", "ms_per_step_item_every_step": 0.5,
                               "ms_per_step_item_once": 0.3, "syncs_item_every_step": 200, "syncs_item_once": 1,
                               "skipped": {}},
            "training_memory": {"model": {"width": sizes["mlp_width"], "depth": sizes["mlp_depth"],
                                          "batch": sizes["mlp_batch"], "optimizer": "Adam", "dtype": "float32"},
                                "phases": memory, "skipped": {}},
            "out_of_memory": {"free_bytes_at_start": 70 * gib, "total_bytes": 80 * gib, "hold_bytes": 30 * gib,
                              "ask_bytes": 50 * gib, "exception_type": "OutOfMemoryError", "message": "synthetic",
                              "phases": [{"phase": name, "allocated": k * gib, "reserved": 40 * gib, "peak": k * gib}
                                         for k, name in enumerate(oom_phases)], "skipped": {}},
            "pinned_transfer": {"bytes": 256 * mib, "pageable": copy_stats, "pageable_non_blocking": copy_stats,
                                "pinned": {**copy_stats, "gb_per_s": 50.0}, "pinned_non_blocking": copy_stats,
                                "d2h_read_before_sync": {"fraction_correct_before_sync": 0.0,
                                                         "fraction_correct_after_sync": 1.0, "host_is_pinned": True},
                                "skipped": {}},
        },
    }


def test_a_complete_recording_loads_and_is_labelled(tmp_path):
    path = tmp_path / gpu_recording.RECORDING_NAME
    path.write_text(json.dumps(_synthetic_recording()))
    recording = gpu_recording.find_recording(path)
    assert not recording.live
    assert recording.label == f"recorded on {SYNTHETIC_DEVICE}, 2000-01-01"
    assert recording.label in recording.describe() and "measured live" not in recording.describe()


@pytest.mark.parametrize("broken", ["no_device", "no_measurement", "dry_run_missing", "dry_run_string", "format"])
def test_incomplete_or_odd_files_are_refused(tmp_path, broken):
    data = copy.deepcopy(_synthetic_recording())
    if broken == "no_device":
        del data["device"]
    elif broken == "no_measurement":
        del data["measurements"]["out_of_memory"]
    elif broken == "dry_run_missing":
        del data["dry_run"]
    elif broken == "dry_run_string":
        data["dry_run"] = "false"  # only the JSON value false is a real recording
    else:
        data["format"] = gpu_recording.FORMAT_VERSION + 1
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(data))
    with pytest.raises(gpu_recording.NotARecording):
        gpu_recording.load_recording(path)


def test_pictures_of_a_recording(tmp_path, monkeypatch):
    """Every picture the notebook draws from a recording is drawn, titled with where it was recorded."""
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(_synthetic_recording()))
    recording = gpu_recording.load_recording(path)
    shown = []
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: shown.append(plt.gcf()))
    try:
        gpu_recording.plot_step_times(recording)
        gpu_recording.plot_training_memory(recording, predicted={"a prediction": 300.0})
        gpu_recording.plot_out_of_memory(recording)
        gpu_recording.plot_transfer(recording)
        assert len(shown) == 4
        for figure in shown:
            assert figure.dpi >= 100
            (axes,) = figure.axes
            assert recording.label in " ".join(axes.get_title().split())  # the label, wrapped to fit
        step_lines = shown[0].axes[0].get_lines()
        assert [len(line.get_ydata()) for line in step_lines] == [gpu_recording.FULL_SIZES["timed_steps"]] * 3
        phase_names = [t.get_text() for t in shown[1].axes[0].get_xticklabels()]
        assert phase_names == [p["phase"] for p in recording["training_memory"]["phases"]]
        legend = [t.get_text() for t in shown[1].axes[0].get_legend().get_texts()]
        assert {"memory_allocated", "memory_reserved", "a prediction"} <= set(legend)
        assert [round(b.get_height(), 6) for b in shown[3].axes[0].patches] == [25.0, 50.0, 25.0]
    finally:
        plt.close("all")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() and os.environ.get("COURSE_DEVICE") != "cuda",
                    reason="no CUDA GPU on this machine (set COURSE_DEVICE=cuda on a GPU machine)")
def test_live_measurements_on_a_gpu():
    assert torch.cuda.is_available(), "COURSE_DEVICE=cuda, but torch.cuda.is_available() is False"
    data = gpu_recording.record("cuda", sizes=gpu_recording.DRY_RUN_SIZES)
    assert data["dry_run"] is False
    gpu_recording.validate(data)
    for name in gpu_recording.MEASUREMENTS:
        assert data["measurements"][name]["skipped"] == {}, name
    phases = data["measurements"]["training_memory"]["phases"]
    assert all(p["reserved"] >= p["allocated"] >= 0 for p in phases)
    oom = data["measurements"]["out_of_memory"]
    assert oom["exception_type"] == "OutOfMemoryError"
    by_phase = {p["phase"]: p for p in oom["phases"]}
    assert by_phase["exception dropped"]["allocated"] < by_phase["after except, exception kept"]["allocated"]
    assert len(data["measurements"]["async_timing"]["ms_events"]) == gpu_recording.DRY_RUN_SIZES["timed_steps"]
    assert gpu_recording.Recording(data, live=True).label.startswith("measured live on ")
