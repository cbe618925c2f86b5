"""Chapter 02 (autograd): one module per exercise (gelu_function, graph_ops, grad_accumulation)."""
