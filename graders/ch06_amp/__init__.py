"""Chapter 06 (mixed precision): one module per exercise (gradient_norm_study, amp_train_step)."""
