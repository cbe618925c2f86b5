"""Chapter 05 (devices): one module per exercise (move_to, positional_encoding, find_max_batch_size)."""
