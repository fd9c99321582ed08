#!/bin/bash
# A tidemark study as a Slurm job array: every array task is a worker of one study, kept in a
# journal file on the shared filesystem. Each worker takes the study's next trial (TPE draws
# from every worker's results, ASHA ranks every worker's trials) until all have finished; a
# task that dies has its trial taken over by another after sweep.grace (60 s by default).
#   sbatch examples/cluster/slurm-study.sh
#   tidemark report /shared/sweeps/study.log      # from any machine, at any time
#SBATCH --job-name=tidemark-study
#SBATCH --array=0-3
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
set -euo pipefail
# The same --out for every task: a trial taken over goes on from its latest checkpoint there.
"${TIDEMARK:-tidemark}" sweep --config "${CONFIG:-configs/search-tpe.toml}" \
  --out "${SWEEPS:-/shared/sweeps}" --storage "${SWEEPS:-/shared/sweeps}/study.log"
