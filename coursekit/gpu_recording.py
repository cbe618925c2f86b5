"""Chapter 05's GPU-only measurements: run live on a GPU, or replayed from a recording made on one.

Some of what chapter 05 teaches only a GPU can show: kernels that are queued and run later, the caching
allocator's two numbers, a real out-of-memory error and the way back from it, copies from pinned memory.
The functions here measure exactly those things. The notebook calls :func:`measure_live` when
``torch.cuda.is_available()``; on a machine without a GPU it loads a recording of the same code, made on a
GPU with::

    python -m coursekit.gpu_recording --out course/05_devices/gpu_recording.json

and labels every number and picture taken from it "recorded on <device>, <date>".

``--dry-run`` runs the same code path on the CPU with tiny sizes, to test it on any machine. Where an
operation exists only on a GPU (CUDA events, allocator statistics, pinned memory, running out of GPU
memory) the dry run records that it skipped it, and the file is marked ``"dry_run": true``.
:func:`load_recording` refuses such a file: a dry run is never presented as a GPU recording.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import platform
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

FORMAT_VERSION = 1
RECORDING_NAME = "gpu_recording.json"
COURSE_COPY = Path(__file__).resolve().parent.parent / "course" / "05_devices" / RECORDING_NAME
RECORD_COMMAND = f"python -m coursekit.gpu_recording --out course/05_devices/{RECORDING_NAME}"
MEASUREMENTS = ("async_timing", "host_sync_cost", "training_memory", "out_of_memory", "pinned_transfer")
REQUIRED_FIELDS = ("format", "dry_run", "device", "torch", "cuda", "date", "sizes", "measurements")
MIB = 2**20

# What a GPU recording measures. Sized so that the whole recording takes a few seconds on a current GPU
# and fits in 4 GiB (apart from the out-of-memory part, which fills most of whatever memory is free).
FULL_SIZES = {
    "matmul_n": 4096, "matmuls_per_step": 4, "timed_steps": 20,
    "mlp_width": 2048, "mlp_depth": 4, "mlp_batch": 8192,
    "small_width": 256, "small_batch": 64, "sync_steps": 200,
    "transfer_mib": 256, "repeats": 5,
    "oom_hold_fraction": 0.45, "oom_ask_fraction": 0.7,
}
# The dry run: the same code, small enough to take well under a second on a laptop's CPU.
DRY_RUN_SIZES = {
    "matmul_n": 64, "matmuls_per_step": 2, "timed_steps": 4,
    "mlp_width": 32, "mlp_depth": 2, "mlp_batch": 16,
    "small_width": 16, "small_batch": 8, "sync_steps": 6,
    "transfer_mib": 1, "repeats": 2,
    "oom_hold_fraction": 0.45, "oom_ask_fraction": 0.7,
}


class NotARecording(ValueError):
    """The file is not a GPU recording that may be presented as one (a dry run, or fields missing)."""


# ---------------------------------------------------------------------------------------------------------
# Pieces shared by the measurements and the notebook
# ---------------------------------------------------------------------------------------------------------

def make_mlp(width: int, depth: int) -> nn.Sequential:
    """The model whose training step the memory measurement follows: ``depth`` square Linear+ReLU blocks.

    The notebook builds the same model on the ``meta`` device to predict what the allocator will report.
    """
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers[:-1])  # no ReLU after the last Linear


class _Device:
    """What a measurement needs from its device, with the CUDA-only parts written down when absent."""

    def __init__(self, device: torch.device, dry_run: bool) -> None:
        self.device, self.dry_run = device, dry_run
        self.is_cuda = device.type == "cuda"
        self.module = torch.get_device_module(device)  # torch.cuda, or torch.cpu (whose synchronize does nothing)

    def sync(self) -> None:
        self.module.synchronize()

    def memory(self) -> dict[str, int] | None:
        if not self.is_cuda:
            return None
        return {"allocated": torch.cuda.memory_allocated(self.device),
                "reserved": torch.cuda.memory_reserved(self.device),
                "peak": torch.cuda.max_memory_allocated(self.device)}

    def reset_peak(self) -> None:
        if self.is_cuda:
            torch.cuda.reset_peak_memory_stats(self.device)

    def skip_reason(self, what: str) -> str:
        why = "dry run on the CPU" if self.dry_run else f"not available on {self.device.type}"
        return f"skipped ({why}): {what} exists only on a CUDA GPU"


def _seconds(function: Callable[[], Any], gpu: _Device) -> float:
    """Wall-clock seconds of ``function()`` including the device work it queued."""
    gpu.sync()
    start = time.perf_counter()
    function()
    gpu.sync()
    return time.perf_counter() - start


def _median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


# ---------------------------------------------------------------------------------------------------------
# The measurements (each takes the device wrapper and the sizes, returns plain JSON-able data)
# ---------------------------------------------------------------------------------------------------------

def measure_async_timing(gpu: _Device, sizes: dict) -> dict:
    """Time the same step three ways: with synchronize (first, so step 0 pays the warm-up), without (only the
    launch is timed), and with CUDA events. Also: how long a final synchronize waits after an unsynchronized loop."""
    n, per_step, steps = sizes["matmul_n"], sizes["matmuls_per_step"], sizes["timed_steps"]
    generator = torch.Generator().manual_seed(0)
    a = (torch.randn(n, n, generator=generator) / math.sqrt(n)).to(gpu.device)   # made on the CPU, then moved

    def step():
        y = a
        for _ in range(per_step):
            y = torch.mm(y, a)
        return y

    gpu.sync()
    synchronized = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        gpu.sync()
        synchronized.append(time.perf_counter() - start)

    gpu.sync()
    launch_only = []
    loop_start = time.perf_counter()
    for _ in range(steps):
        start = time.perf_counter()
        step()
        launch_only.append(time.perf_counter() - start)
    loop_end = time.perf_counter()
    gpu.sync()
    waited = time.perf_counter() - loop_end

    result: dict[str, Any] = {
        "step": f"{per_step} chained {n}x{n} float32 matmuls",
        "flop_per_step": 2 * per_step * n**3,
        "ms_synchronized": [1000 * s for s in synchronized],
        "ms_launch_only": [1000 * s for s in launch_only],
        "loop_ms_without_sync": 1000 * (loop_end - loop_start),
        "wait_ms_at_final_sync": 1000 * waited,
        "skipped": {},
    }
    if gpu.is_cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
        for begin, end in events:
            begin.record()
            step()
            end.record()
        torch.cuda.synchronize(gpu.device)
        result["ms_events"] = [begin.elapsed_time(end) for begin, end in events]
    else:
        result["ms_events"] = None
        result["skipped"]["ms_events"] = gpu.skip_reason("torch.cuda.Event timing")
    del a
    return result


def measure_host_sync_cost(gpu: _Device, sizes: dict) -> dict:
    """A small model's training loop, with `loss.item()` every step versus the losses summed on the device
    and read once at the end."""
    width, batch, steps = sizes["small_width"], sizes["small_batch"], sizes["sync_steps"]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)).to(gpu.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, generator=generator).to(gpu.device)
    y = torch.randn(batch, 1, generator=generator).to(gpu.device)

    def train_step():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    def item_every_step():
        losses = [train_step().item() for _ in range(steps)]
        return sum(losses)

    def item_once():
        total = torch.zeros((), device=gpu.device)
        for _ in range(steps):
            total += train_step().detach()
        return total.item()

    for _ in range(10):  # warm-up: the first steps pay for initialisation
        train_step()
    every = _seconds(item_every_step, gpu)
    once = _seconds(item_once, gpu)
    return {"steps": steps, "model": f"Linear({width}, {width}), ReLU, Linear({width}, 1); batch {batch}",
            "ms_per_step_item_every_step": 1000 * every / steps, "ms_per_step_item_once": 1000 * once / steps,
            "syncs_item_every_step": steps, "syncs_item_once": 1, "skipped": {}}


def measure_training_memory(gpu: _Device, sizes: dict) -> dict:
    """The allocator's numbers at each phase of two Adam training steps of :func:`make_mlp`, then after
    dropping every reference and after ``empty_cache``."""
    width, depth, batch = sizes["mlp_width"], sizes["mlp_depth"], sizes["mlp_batch"]
    gc.collect()
    if gpu.is_cuda:
        torch.cuda.empty_cache()
    phases: list[dict] = []

    def mark(name: str) -> None:
        gpu.sync()
        phases.append({"phase": name, **(gpu.memory() or {"allocated": None, "reserved": None, "peak": None})})
        gpu.reset_peak()

    mark("start")
    torch.manual_seed(0)
    model = make_mlp(width, depth).to(gpu.device)
    mark("model on device")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch, width, generator=generator).to(gpu.device)
    y = torch.randn(batch, width, generator=generator).to(gpu.device)
    mark("batch on device")
    for step in (1, 2):
        loss = nn.functional.mse_loss(model(x), y)
        mark(f"step {step}: forward")
        loss.backward()
        mark(f"step {step}: backward")
        optimizer.step()
        mark(f"step {step}: optimizer.step")
        optimizer.zero_grad()  # set_to_none=True: the gradients are freed
        del loss
        mark(f"step {step}: zero_grad")
    del model, optimizer, x, y
    gc.collect()
    mark("references dropped")
    if gpu.is_cuda:
        torch.cuda.empty_cache()
    mark("empty_cache")
    result: dict[str, Any] = {"model": {"width": width, "depth": depth, "batch": batch, "optimizer": "Adam",
                                        "dtype": "float32"},
                              "phases": phases, "skipped": {}}
    if not gpu.is_cuda:
        result["skipped"]["allocator"] = gpu.skip_reason("torch.cuda.memory_allocated / memory_reserved")
        result["skipped"]["empty_cache"] = gpu.skip_reason("torch.cuda.empty_cache")
    return result


def _fill_then_run_out(hold: int, ask: int, device: torch.device) -> None:
    """A 'training step' whose activations fit (``hold`` bytes) and whose next allocation (``ask``) does not."""
    activations = torch.empty(hold, dtype=torch.uint8, device=device)  # noqa: F841 - held by this frame
    torch.empty(ask, dtype=torch.uint8, device=device)


def measure_out_of_memory(gpu: _Device, sizes: dict) -> dict:
    """Run out of GPU memory for real, keep the exception (the trap), then recover: drop it, empty the cache,
    and retry the allocation that failed."""
    if not gpu.is_cuda:
        return {"skipped": {"out_of_memory": gpu.skip_reason("running out of GPU memory")}}
    gc.collect()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(gpu.device)
    hold, ask = int(free * sizes["oom_hold_fraction"]), int(free * sizes["oom_ask_fraction"])
    phases: list[dict] = []

    def mark(name: str) -> None:
        torch.cuda.synchronize(gpu.device)
        phases.append({"phase": name, **gpu.memory()})
        gpu.reset_peak()

    mark("start")
    kept = None
    message = exception_type = None
    try:
        _fill_then_run_out(hold, ask, gpu.device)
    except torch.OutOfMemoryError as error:
        message, exception_type = str(error), type(error).__name__
        mark("inside except")
        torch.cuda.empty_cache()
        mark("empty_cache inside except")
        kept = error  # the trap: the exception's traceback keeps the failing frame, and its tensors, alive
    mark("after except, exception kept")
    del kept
    gc.collect()
    mark("exception dropped")
    torch.cuda.empty_cache()
    mark("empty_cache")
    retry = torch.empty(ask, dtype=torch.uint8, device=gpu.device)
    mark("retry of the failed allocation")
    del retry
    torch.cuda.empty_cache()
    mark("retry freed, empty_cache")
    return {"free_bytes_at_start": free, "total_bytes": total, "hold_bytes": hold, "ask_bytes": ask,
            "exception_type": exception_type, "message": message, "phases": phases, "skipped": {}}


def measure_pinned_transfer(gpu: _Device, sizes: dict) -> dict:
    """Host-to-device copy speed from pageable and from pinned memory, how long a non_blocking call takes to
    return, and what a device-to-host non_blocking copy holds when read before synchronizing."""
    n_bytes = sizes["transfer_mib"] * MIB
    repeats = sizes["repeats"]
    generator = torch.Generator().manual_seed(0)
    pageable = torch.randn(n_bytes // 4, generator=generator)
    result: dict[str, Any] = {"bytes": n_bytes, "skipped": {}}

    def copy_stats(source: torch.Tensor, non_blocking: bool) -> dict:
        source.to(gpu.device, non_blocking=non_blocking)  # warm-up copy, not timed
        gpu.sync()
        totals, returns = [], []
        for _ in range(repeats):
            gpu.sync()
            start = time.perf_counter()
            source.to(gpu.device, non_blocking=non_blocking)
            returned = time.perf_counter()
            gpu.sync()
            done = time.perf_counter()
            returns.append(returned - start)
            totals.append(done - start)
        seconds = max(statistics.median(totals), 1e-9)
        return {"ms_total": 1000 * seconds, "ms_until_call_returned": _median_ms(returns),
                "gb_per_s": n_bytes / seconds / 1e9}

    result["pageable"] = copy_stats(pageable, non_blocking=False)
    result["pageable_non_blocking"] = copy_stats(pageable, non_blocking=True)
    if gpu.is_cuda:
        pinned = pageable.pin_memory()
        result["pinned"] = copy_stats(pinned, non_blocking=False)
        result["pinned_non_blocking"] = copy_stats(pinned, non_blocking=True)
        del pinned
        # Device to host, non_blocking, read before synchronizing: queue work first so the copy waits behind it.
        a = (torch.randn(sizes["matmul_n"], sizes["matmul_n"], generator=generator) / math.sqrt(sizes["matmul_n"])).to(gpu.device)
        ones = torch.ones(n_bytes // 4, device=gpu.device)
        torch.cuda.synchronize(gpu.device)
        y = a
        for _ in range(sizes["matmuls_per_step"] * 4):
            y = torch.mm(y, a)                      # tens of milliseconds of work, queued on the stream
        host = ones.to("cpu", non_blocking=True)    # queued behind it; returns at once, into pinned memory
        early = (host == 1).float().mean().item()   # read on the CPU before the copy has run
        torch.cuda.synchronize(gpu.device)
        late = (host == 1).float().mean().item()
        result["d2h_read_before_sync"] = {"fraction_correct_before_sync": early, "fraction_correct_after_sync": late,
                                          "host_is_pinned": host.is_pinned()}
        del a, y, ones, host
    else:
        for key in ("pinned", "pinned_non_blocking"):
            result[key] = None
            result["skipped"][key] = gpu.skip_reason("pin_memory()")
        result["d2h_read_before_sync"] = None
        result["skipped"]["d2h_read_before_sync"] = gpu.skip_reason("a device-to-host copy")
    return result


# ---------------------------------------------------------------------------------------------------------
# Making, saving and loading a recording
# ---------------------------------------------------------------------------------------------------------

def _device_facts(device: torch.device) -> dict:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return {"device": props.name, "device_memory_gib": round(props.total_memory / 2**30, 1),
                "compute_capability": f"{props.major}.{props.minor}"}
    return {"device": f"{platform.processor() or platform.machine()} CPU (dry run)", "device_memory_gib": None,
            "compute_capability": None}


def record(device: str | torch.device = "cuda", *, dry_run: bool = False, sizes: dict | None = None) -> dict:
    """Run every measurement and return the recording (plain data, as written to JSON).

    A real recording needs a CUDA device. ``dry_run=True`` runs the same code on the CPU with tiny sizes and
    marks the result, so that it can never be mistaken for a GPU recording.
    """
    device = torch.device("cpu") if dry_run else torch.device(device)
    if not dry_run and device.type != "cuda":
        raise ValueError(f"a GPU recording needs a CUDA device, got {device}; use dry_run=True to run the code on the CPU")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    sizes = dict(sizes or (DRY_RUN_SIZES if dry_run else FULL_SIZES))
    gpu = _Device(device, dry_run)
    measurements = {}
    threads = torch.get_num_threads()
    if dry_run:
        torch.set_num_threads(1)  # tiny CPU matmuls: one thread is fastest, and steady on a busy machine
    try:
        for name in MEASUREMENTS:
            measurements[name] = globals()[f"measure_{name}"](gpu, sizes)
            gc.collect()
            if gpu.is_cuda:
                torch.cuda.empty_cache()
    finally:
        torch.set_num_threads(threads)
    return {
        "format": FORMAT_VERSION,
        "dry_run": dry_run,
        **_device_facts(device),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "made_by": "python -m coursekit.gpu_recording" + (" --dry-run" if dry_run else ""),
        "sizes": sizes,
        "measurements": measurements,
    }


@dataclass
class Recording:
    """GPU measurements and where they come from: ``live`` (made in this process) or a recording's file."""

    data: dict
    live: bool
    path: Path | None = None

    def __getitem__(self, measurement: str) -> dict:
        return self.data["measurements"][measurement]

    @property
    def device(self) -> str:
        return self.data["device"]

    @property
    def label(self) -> str:
        """How every number and picture from these measurements is labelled."""
        if self.live:
            return f"measured live on {self.device}"
        return f"recorded on {self.device}, {self.data['date']}"

    def describe(self) -> str:
        versions = f"torch {self.data['torch']}, CUDA {self.data['cuda']}"
        where = "" if self.live or self.path is None else f" (file {self.path.name})"
        return f"GPU numbers below: {self.label} — {versions}{where}"


def measure_live(device: str | torch.device = "cuda") -> Recording:
    """Every measurement, now, on this machine's GPU."""
    return Recording(record(device), live=True)


def validate(data: dict, source: str = "the recording") -> None:
    """Raise :class:`NotARecording` unless ``data`` is a complete GPU recording (and not a dry run)."""
    if not isinstance(data, dict):
        raise NotARecording(f"{source} is not a JSON object")
    missing = [field for field in REQUIRED_FIELDS if field not in data]
    if missing:
        raise NotARecording(f"{source} lacks {', '.join(missing)}")
    if data["dry_run"] is not False:
        raise NotARecording(f"{source} is a dry run made on the CPU (\"dry_run\": {json.dumps(data['dry_run'])}), "
                            f"not a GPU recording; make one on a GPU machine with `{RECORD_COMMAND}`")
    if data["format"] != FORMAT_VERSION:
        raise NotARecording(f"{source} has format {data['format']}, this course reads format {FORMAT_VERSION}")
    absent = [name for name in MEASUREMENTS if name not in data["measurements"]]
    if absent:
        raise NotARecording(f"{source} lacks the measurements {', '.join(absent)}")


def load_recording(path: str | Path) -> Recording:
    """Read a recording; :class:`NotARecording` for a dry run or an incomplete file."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    validate(data, str(path))
    return Recording(data, live=False, path=path)


def find_recording(*places: str | Path) -> Recording | None:
    """The recording next to the notebook (the working directory), else the course's copy; None if neither exists."""
    for place in places or (Path(RECORDING_NAME), COURSE_COPY):
        if Path(place).is_file():
            return load_recording(place)
    return None


def gpu_measurements(device: torch.device | str | None = None) -> Recording | None:
    """What the notebook shows: live measurements when a CUDA GPU is here, else the recording, else None."""
    if torch.cuda.is_available():
        return measure_live(device if device is not None and torch.device(device).type == "cuda" else "cuda")
    return find_recording()


NO_RECORDING = (
    "No GPU here, and no recording of a GPU run was found "
    f"(a {RECORDING_NAME} made on a GPU, next to the notebook). The GPU-only cells below print what they "
    "would measure and draw nothing. To make the recording, on a machine with an NVIDIA GPU and this course installed, run\n"
    f"    {RECORD_COMMAND}\n"
    "from the course's root folder; this notebook then reads it (or run the notebook itself on that machine, "
    "and it measures live)."
)


# ---------------------------------------------------------------------------------------------------------
# Pictures of a recording (the notebook's, and the tests')
# ---------------------------------------------------------------------------------------------------------

def _title(what: str, recording: Recording, width: int = 64) -> str:
    """A picture's title: what it shows, then where it was measured (wrapped, so that it never runs off)."""
    return what + "\n" + textwrap.fill(recording.label, width)


def plot_step_times(recording: Recording) -> None:
    """Time per step, measured with and without synchronize (and with CUDA events)."""
    from coursekit.plots import plot_curves

    timing = recording["async_timing"]

    def by_step(values: list[float]) -> tuple[list[int], list[float]]:
        return list(range(len(values))), values

    curves = {"with synchronize\n(the real time)": by_step(timing["ms_synchronized"]),
              "without synchronize\n(only the launch)": by_step(timing["ms_launch_only"])}
    if timing.get("ms_events"):
        curves["CUDA events"] = by_step(timing["ms_events"])
    plot_curves(curves, xlabel="step", ylabel="ms per step (log scale)", logy=True, legend_outside=True,
                title=_title(f"time per step: {timing['step']}", recording))


def _mib_series(phases: list[dict], keys: dict[str, str]) -> dict[str, list[float]]:
    return {label: [p[key] / MIB for p in phases] for label, key in keys.items()}


def plot_training_memory(recording: Recording, predicted: dict[str, float] | None = None) -> None:
    """memory_allocated, memory_reserved and the peak in between, at each phase of two training steps.

    ``predicted`` (MiB above what was allocated at the first phase, "start") draws dashed horizontal lines, e.g.
    the parameter, batch and optimizer bytes counted on meta.
    """
    from coursekit.plots import plot_phases

    memory = recording["training_memory"]
    phases = memory["phases"]
    series = _mib_series(phases, {"memory_reserved": "reserved", "peak since the previous point": "peak",
                                  "memory_allocated": "allocated"})
    start = phases[0]["allocated"] / MIB
    levels = {name: start + mib for name, mib in (predicted or {}).items()}
    model = memory["model"]
    plot_phases([p["phase"] for p in phases], series, ylabel="MiB", levels=levels,
                title=_title(f"GPU memory over two Adam steps: MLP width {model['width']} × {model['depth']}, "
                             f"batch {model['batch']}", recording))


def plot_out_of_memory(recording: Recording) -> None:
    """allocated and reserved through a real out-of-memory error and the recovery from it."""
    from coursekit.plots import plot_phases

    oom = recording["out_of_memory"]
    series = _mib_series(oom["phases"], {"memory_reserved": "reserved", "memory_allocated": "allocated"})
    plot_phases([p["phase"] for p in oom["phases"]], series, ylabel="MiB",
                title=_title("an out-of-memory error and the way back", recording))


def plot_transfer(recording: Recording) -> None:
    """Host-to-device copy speed from pageable and pinned memory."""
    from coursekit.plots import plot_bars

    transfer = recording["pinned_transfer"]
    bars = {"pageable": transfer["pageable"]["gb_per_s"]}
    if transfer.get("pinned"):
        bars["pinned"] = transfer["pinned"]["gb_per_s"]
        bars["pinned,\nnon_blocking"] = transfer["pinned_non_blocking"]["gb_per_s"]
    plot_bars(bars, ylabel="GB/s (host to device)", fmt="{:.1f} GB/s",
              title=_title(f"copying {transfer['bytes'] // MIB} MiB to the GPU", recording))


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.gpu_recording",
                                     description="Record chapter 05's GPU measurements into a JSON file.")
    parser.add_argument("--out", required=True, help=f"where to write the recording (the course reads {COURSE_COPY.relative_to(COURSE_COPY.parents[2])})")
    parser.add_argument("--dry-run", action="store_true",
                        help="run the same code on the CPU with tiny sizes; the file is marked \"dry_run\": true")
    parser.add_argument("--device", default="cuda", help="the CUDA device to record on (default: cuda)")
    args = parser.parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        print("no CUDA GPU is available here: a recording must be made on a GPU "
              "(--dry-run runs the same code on the CPU to test it)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    data = record(args.device, dry_run=args.dry_run)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    kind = "dry run (CPU, not a GPU recording)" if args.dry_run else "recording"
    print(f"{kind} of {data['device']} written to {out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
