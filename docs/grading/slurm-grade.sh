#!/bin/bash
# Grade one chapter as a Slurm job array: array task K grades shard K of SHARDS (the array's size).
#
#   shards=$(sbatch --parsable --export=ALL,CHAPTER=01_tensors docs/grading/slurm-grade.sh)
#   sbatch --dependency=afterok:$shards --wrap ".venv/bin/python -m coursekit.classgrade 01_tensors --merge"
#
# Submit from the course root (or set COURSE_ROOT); it must be on a file system every node sees. The second
# command runs once, after every array task has succeeded, and writes the shards into the gradebook (it
# refuses, writing nothing, while a shard is missing).
#SBATCH --job-name=grade-shards
#SBATCH --array=0-3
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=03:00:00
#SBATCH --output=slurm-grade-%A_%a.log
set -euo pipefail
: "${CHAPTER:?set CHAPTER, e.g. sbatch --export=ALL,CHAPTER=01_tensors docs/grading/slurm-grade.sh}"
COURSE_ROOT=${COURSE_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}
PYTHON=${PYTHON:-$COURSE_ROOT/.venv/bin/python}   # the environment `make setup` built
# The array's indices must be 0 .. SHARDS-1 (as --array=0-3 above): K counts from 0.
# Kernels and checks run confined by the node's kernel (Landlock, seccomp, rlimits); on a node without Landlock
# (Linux older than 5.13, or not among its LSMs) this fails at the first kernel, saying why, instead of grading
# unconfined. Set COURSE_REQUIRE_CONFINEMENT=0 to grade there all the same (the report then says unconfined).
export COURSE_REQUIRE_CONFINEMENT=${COURSE_REQUIRE_CONFINEMENT:-1}
SHARDS=${SLURM_ARRAY_TASK_COUNT:?run it as a job array (sbatch), or set SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT}
exec "$PYTHON" -m coursekit.classgrade "$CHAPTER" --root "$COURSE_ROOT" \
    --shard "$SLURM_ARRAY_TASK_ID/$SHARDS" --jobs "${SLURM_CPUS_PER_TASK:-2}"
