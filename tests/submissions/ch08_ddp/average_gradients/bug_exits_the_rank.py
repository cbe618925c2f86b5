"""Bug: hostile: ends its own process with os._exit(0) instead of averaging anything."""
import os

EXPECT_FAIL = {
    'averages_on_two_ranks': 'ended its process with exit status',
    'averages_on_three_ranks': 'ended its process with exit status',
    'skips_parameters_without_gradients': 'ended its process with exit status',
    'averages_within_a_group': 'ended its process with exit status',
    'leaves_the_weights_alone': 'ended its process with exit status',
}


def average_gradients(model, group=None):
    os._exit(0)
