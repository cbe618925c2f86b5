"""Chapter 03 (modules): one module per exercise (glu, running_norm)."""
