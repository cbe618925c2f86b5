"""Chapter 01 (tensors): one module per exercise.

Every expected value comes from PyTorch itself (``torch.empty(shape).stride()``, ``is_contiguous()``,
``Tensor.unfold``), computed in the judge before the student's code runs.
"""
