"""Chapter 07 (checkpointing): one module per exercise (checkpoint, checkpoint_files)."""
