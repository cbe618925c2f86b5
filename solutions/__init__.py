"""Reference solutions, one module per chapter: the single source of each exercise's answer.

The instructor notebooks' solution cells call these functions rather than repeating them, so an
answer cannot drift between the notebook, the graders' tests and this package.
"""
