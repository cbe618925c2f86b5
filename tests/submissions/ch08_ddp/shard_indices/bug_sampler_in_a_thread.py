"""Bug: uses DistributedSampler itself, but inside a worker thread (sys.setprofile is per-thread). Spec: must not use DistributedSampler (from an independent red team)."""
EXPECT_FAIL = {'does_not_use_the_sampler': 'shard_indices used torch.utils.data.DistributedSampler'}

import threading
import torch.utils.data.distributed as tud


def shard_indices(num_samples, rank, world_size, *, shuffle=True, seed=0, epoch=0, drop_last=False):
    if not 0 <= rank < world_size:
        raise ValueError("bad rank")
    out = {}

    def work():
        s = tud.DistributedSampler(range(num_samples), num_replicas=world_size, rank=rank, shuffle=shuffle,
                                   seed=seed, drop_last=drop_last)
        s.set_epoch(epoch)
        out["v"] = list(s)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return out["v"]
