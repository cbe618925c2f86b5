"""nbgrader configuration for the course (instructor side).

``course/`` is the source directory: each chapter folder (``01_tensors``, ...) is one assignment.
See README.md, "Instructor workflow", for the commands.
"""

import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "course"

# The graders are an installed package, so test cells import them from any directory (autograde runs
# in autograded/<student>/<chapter>/). "python3" runs the kernel of the environment running nbgrader.
c.Execute.kernel_name = "python3"
c.ExecutePreprocessor.kernel_name = "python3"
# Every kernel that runs a submission is confined by the operating system before it runs a cell (Linux: Landlock,
# seccomp, rlimits; coursekit/kernel_sandbox.py): it writes only its own working folder and scratch, reads none of
# submitted/, autograded/, the gradebook, the grades of record, solutions/ or the checks, reaches no network and no
# process outside. Its checks are judged outside, by a judge this process starts. make grade's workers fork their
# kernels from a zygote, confined the same way (coursekit/kernelzygote.py).
c.Execute.kernel_manager_class = "coursekit.kernel_sandbox.ConfinedKernelManager"
# Seconds a single cell may run; a chapter's slowest cell takes a few seconds on a 2-core laptop.
c.Execute.timeout = 120
c.ExecutePreprocessor.timeout = 120
c.Execute.interrupt_on_timeout = True
# Once the last cell has run, its outputs are all in: the kernel is killed (its process group, SIGKILL) instead
# of asked to exit. A graceful exit tears down torch and matplotlib, which cost each autograded submission
# 1.3 s of a 7.3 s run on a 2-core laptop (chapter 01, issue 14); nothing the kernel would still do at exit
# counts for the grade (its judge sees its stdin close and cleans up after itself either way).
c.Execute.shutdown_kernel = "immediate"
c.ExecutePreprocessor.shutdown_kernel = "immediate"

# Any stderr in a graded cell scores it 0. The graders keep student stderr out of the cell, but a
# library warning raised outside them still could: drop warning lines from stderr before grading.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\w*Warning\b"

# Autograde runs the graded part of a chapter only (its opening cell, answers and tests): the demonstration
# cells cannot change a score, and running them cost up to 3.2x a trivial notebook (coursekit/autograde.py).
# The rest of nbgrader's list is its default.
c.Autograde.autograde_preprocessors = [
    "coursekit.autograde.RunGradedPartOnly",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# A submission that deleted a graded cell gets it back (scored as written in the source) rather
# than losing it silently.
c.OverwriteCells.add_missing_cells = True

# Students see their score per cell in the feedback; hidden test code is never shown (nbgrader's
# feedback would otherwise render the hidden tests that autograde restored, and tracebacks quoting them).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "coursekit.feedback.HideHiddenTests",
    "coursekit.feedback.SanitizeSubmission",  # a submission's script, handlers and javascript: links: not in the HTML
]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"
