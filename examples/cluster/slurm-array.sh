#!/bin/bash
# A tidemark search as a Slurm job array: each array task trains every 4th trial into one
# shared sweep directory (tidemark reads SLURM_ARRAY_TASK_ID, _MIN and _COUNT).
#   sbatch examples/cluster/slurm-array.sh
#   tidemark report /shared/sweeps/search-grid-sweep     # once every task has finished
#SBATCH --job-name=tidemark-search
#SBATCH --array=0-3
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
set -euo pipefail
"${TIDEMARK:-tidemark}" sweep --config "${CONFIG:-configs/search-grid.toml}" --out "${SWEEPS:-/shared/sweeps}"
