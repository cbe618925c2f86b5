"""Chapter 04 (data): one module per exercise (pad_collate, range_stream, lr_range_test)."""
