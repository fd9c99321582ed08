#!/bin/bash
# A tidemark search as a Slurm job array: each array task is a worker of one study, kept in
# journal.log in the sweep directory every task shares (tidemark reads SLURM_ARRAY_TASK_ID), and
# takes the study's next trial as it frees up.
#   sbatch examples/cluster/slurm-array.sh
#   tidemark report /shared/sweeps/search-grid-sweep     # at any time
#SBATCH --job-name=tidemark-search
#SBATCH --array=0-3
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
set -euo pipefail
"${TIDEMARK:-tidemark}" sweep --config "${CONFIG:-configs/search-grid.toml}" --out "${SWEEPS:-/shared/sweeps}"
