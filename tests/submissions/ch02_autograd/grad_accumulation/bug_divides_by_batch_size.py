"""Bug: divides each (already mean) micro-batch loss by the batch size as well as by accum_steps."""
EXPECT_FAIL = {"plain_sgd_matches": "divided by the batch size"}

def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if accum_steps < 1 or len(micro_batches) % accum_steps:
        raise ValueError("bad")
    out = []
    for s in range(0, len(micro_batches), accum_steps):
        optimizer.zero_grad()
        tot = 0.0
        for x, y in micro_batches[s:s + accum_steps]:
            loss = loss_fn(model(x), y)
            (loss / (accum_steps * x.shape[0])).backward()
            tot += loss.item()
        optimizer.step()
        out.append(tot / accum_steps)
    return out
