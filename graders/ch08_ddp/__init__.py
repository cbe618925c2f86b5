"""Chapter 08 (distributed data parallel): one module per exercise (shard_indices, average_gradients,
ddp_accumulation)."""
