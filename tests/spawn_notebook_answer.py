"""Run by tests/test_isolation.py in a fresh interpreter with COURSE_GRADER_START_METHOD=spawn: a notebook's
answer (a function and a class defined by exec, as a notebook cell defines them) must reach the runner."""

import graders

SOURCE = '''
class Rule:  # a class defined in the notebook: it must travel by value too
    def holds(self, shape, strides):
        if len(shape) != len(strides):
            raise ValueError("lengths differ")
        if 0 in shape:
            return True
        expected = 1
        for size, stride in zip(reversed(shape), reversed(strides)):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True


def is_contiguous(shape, strides):
    return Rule().holds(tuple(shape), tuple(strides))
'''

namespace: dict = {}
exec(SOURCE, namespace)
report = graders.check_namespace("is_contiguous", namespace, ["contiguous_layouts", "length_mismatch_raises"],
                                 device="cpu")
print(report.as_text())
