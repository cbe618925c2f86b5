"""Bug: saves {name: parameter} from model.named_parameters() instead of model.state_dict() and loads it with
strict=False: the buffers (BatchNorm's running statistics and num_batches_tracked, any registered buffer) are
neither saved nor restored. The set-up's own network has no buffers, so only a model with some shows it."""
import io
import os
import random

import numpy as np
import torch

EXPECT_FAIL = {'round_trips_on_generated_setups': "only the model's buffers differ",
               'failed_save_keeps_the_previous_file': "it did not write model.state_dict()"}


def save_checkpoint(path, *, model, optimizer, step, scheduler=None, scaler=None, generator=None):
    np_state = np.random.get_state(legacy=False)
    state = {
        "model": {name: p.detach().clone() for name, p in model.named_parameters()},
        "optimizer": optimizer.state_dict(),
        "step": int(step),
        "rng": {
            "random": random.getstate(),
            "numpy": {
                "bit_generator": np_state["bit_generator"],
                "key": torch.tensor(np_state["state"]["key"].astype(np.int64)),
                "pos": int(np_state["state"]["pos"]),
                "has_gauss": int(np_state["has_gauss"]),
                "gauss": float(np_state["gauss"]),
            },
            "cpu": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        },
    }
    for name, obj in (("scheduler", scheduler), ("scaler", scaler)):
        if obj is not None:
            state[name] = obj.state_dict()
    if generator is not None:
        state["generator"] = generator.get_state()

    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()

    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_checkpoint(path, *, model, optimizer, scheduler=None, scaler=None, generator=None, map_location="cpu"):
    state = torch.load(path, map_location=map_location, weights_only=True)
    wanted = {"scheduler": scheduler, "scaler": scaler, "generator": generator}
    missing = [name for name, obj in wanted.items() if obj is not None and name not in state]
    if missing:
        raise KeyError(f"the checkpoint does not contain: {', '.join(missing)}")

    model.load_state_dict(state["model"], strict=False)
    optimizer.load_state_dict(state["optimizer"])
    for name in ("scheduler", "scaler"):
        if wanted[name] is not None:
            wanted[name].load_state_dict(state[name])
    if generator is not None:
        generator.set_state(state["generator"].cpu())

    rng = state["rng"]
    random.setstate(rng["random"])
    n = rng["numpy"]
    np.random.set_state({
        "bit_generator": n["bit_generator"],
        "state": {"key": n["key"].cpu().numpy().astype(np.uint32), "pos": n["pos"]},
        "has_gauss": n["has_gauss"],
        "gauss": n["gauss"],
    })
    torch.set_rng_state(rng["cpu"].cpu())
    if torch.cuda.is_available():
        cuda_states = [s.cpu() for s in rng["cuda"][: torch.cuda.device_count()]]
        for index, s in enumerate(cuda_states):
            torch.cuda.set_rng_state(s, index)
    return int(state["step"])
