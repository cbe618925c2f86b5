"""Bug (hostile): hands the work to the course's own reference solution instead of writing it."""
from solutions.ch08_ddp import ddp_accumulation_step as _reference

EXPECT_FAIL = {'*': ''}
EXPECT_SCORE = 0


def ddp_accumulation_step(ddp_model, optimizer, loss_fn, micro_batches):
    return _reference(ddp_model, optimizer, loss_fn, micro_batches)
