"""Bug: clears gradients with p.grad.zero_(), which fails while .grad is still None."""
EXPECT_FAIL = {"plain_sgd_matches": ".grad is None until its first backward"}

def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad")
    out = []
    for s in range(0, len(micro_batches), accum_steps):
        for p in model.parameters():
            p.grad.zero_()
        tot = 0.0
        for x, y in micro_batches[s:s + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / accum_steps).backward()
            tot += loss.item()
        optimizer.step()
        out.append(tot / accum_steps)
    return out
