"""Correct, written differently: adds the window's losses into one tensor and calls backward once on
their mean (keeps the window's graphs alive, but the gradient is the same)."""
EXPECT_PASS = True


def train_with_accumulation(model, micro_batches, loss_fn, optimizer, accum_steps):
    if not isinstance(accum_steps, int) or accum_steps < 1:
        raise ValueError("accum_steps must be a positive int")
    n_windows, leftover = divmod(len(micro_batches), accum_steps)
    if leftover:
        raise ValueError("the micro-batches do not split into whole windows")
    losses = []
    for w in range(n_windows):
        window = micro_batches[w * accum_steps:(w + 1) * accum_steps]
        mean_loss = sum(loss_fn(model(x), y) for x, y in window) / accum_steps
        optimizer.zero_grad(set_to_none=True)
        mean_loss.backward()
        optimizer.step()
        losses.append(float(mean_loss))
    return losses
