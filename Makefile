# The two commands a learner needs: `make lab` and `make test`. Both run `make setup` first.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.setup-done
# Tools the course runs by name (nbgrader runs `alembic`) come from the course environment.
export PATH := $(BIN):$(PATH)
# Byte-code caches stay out of the tree.
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup lab lab-instructor test test-fast notebooks student-edition grade clean

## setup: create .venv with the pinned environment and the course installed (editable); a no-op when nothing changed
setup: $(STAMP)

$(STAMP): requirements.in constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.in -c constraints.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -c "import torch, torchvision, nbgrader, graders, solutions, coursekit"
	@touch $(STAMP)
	@echo "setup: .venv is ready"

## lab: build the student edition in workspace/ (new chapters only) and open JupyterLab on it
lab: setup
	$(BIN)/python -m coursekit.lab $(LAB_ARGS)

## lab-instructor: open JupyterLab on course/ (solutions and hidden tests included)
lab-instructor: setup
	COURSE_INSTRUCTOR=1 $(BIN)/python -m coursekit.lab --instructor $(LAB_ARGS)

## student-edition: only build workspace/ (what `make lab` does before starting JupyterLab)
student-edition: setup
	$(BIN)/python -m coursekit.lab --build-only

## test: the whole suite: graders, command line, nbgrader round trip, JupyterLab, and nbval on every chapter
## (the instructor notebooks, whose answers import the reference, with processes started by spawn as on
## macOS and Windows, on another CPU's code paths: AVX2, two threads; tests/test_notebook_numerics.py: a committed
## output must reproduce on any machine). One pytest session spread over every core and one more worker (pytest-xdist, TEST_JOBS below; JOBS=0 runs it in one process)
## with --dist loadscope: a test class or file stays on one worker (so a chapter's nbgrader round trip, one
## class, runs once, and a chapter's notebook runs too).
## A bug fixture is graded on the checks it names; COURSE_EVERY_CHECK=1 (CI) grades every check (tests/submissions.py)
## and executes the notebooks under four more conditions.
JOBS ?= auto
# make test's workers: one more than the cores, at most one per 2 GiB of memory. Its tests wait on the processes they
# start (kernels, ranks, judges) about an eighth of the time: on 2 cores, 2 workers kept the machine 87 % busy and
# took 246 s for tests/test_submissions.py, 3 workers 98 % and 182 s; the whole suite 661 s -> 580 s (2026-12-03).
TEST_JOBS ?= $(if $(filter-out auto,$(JOBS)),$(JOBS),$(shell $(PYTHON) -c "import os; memory = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') if hasattr(os, 'sysconf') else 1 << 40; print(max(1, min((os.cpu_count() or 1) + 1, memory >> 31)))"))
# The tests, CI and the committed notebooks never download (chapter 04 then uses its offline data).
test notebooks: export COURSE_OFFLINE := 1
test: setup
	$(BIN)/python -m pytest tests -n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder

## test-fast: the suite without nbgrader, JupyterLab and nbval (for quick iteration)
test-fast: export COURSE_OFFLINE := 1
test-fast: setup
	$(BIN)/python -m pytest tests -m "not slow" -n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder

## grade: autograde every submission of CHAPTER in submitted/ on JOBS workers (default: every core), make each
## one's grade of record outside the kernel, write both to the gradebook (one writer) and the class report to
## reports/CHAPTER/ (coursekit/classgrade.py). SHARD=K/N grades one shard only (another machine, a Kubernetes
## or Slurm job: docs/grading/); MERGE=1 then writes every shard. In the course root.
## (JOBS is shared with `make test`, where it defaults to one worker more than the cores: TEST_JOBS.)
grade: setup
	@test -n "$(CHAPTER)" || { echo "usage: make grade CHAPTER=01_tensors [JOBS=2] [STUDENT=id] [SHARD=K/N | MERGE=1]"; exit 2; }
	$(BIN)/python -m coursekit.classgrade $(CHAPTER) $(if $(filter-out auto,$(JOBS)),--jobs $(JOBS)) \
		$(if $(STUDENT),--student $(STUDENT)) $(if $(SHARD),--shard $(SHARD)) $(if $(filter 1,$(MERGE)),--merge)

## notebooks: rebuild every chapter notebook from course_src/ and execute it (commit the result)
notebooks: setup
	COURSE_INSTRUCTOR=1 $(BIN)/python -m coursekit.notebooks build

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
