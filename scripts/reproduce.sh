#!/usr/bin/env bash
# Train the shipped checkpoints and the benchmark runs of the README's results table.
# Two queues run side by side with one thread each (better throughput than one queue on two threads
# on a 2-core machine). Logs: runs/<name>.log (per-epoch JSON lines). Then
# python scripts/update_readme_results.py keeps each run's JSON in results/ and refreshes the README table.
# FOLDS picks the cross-validation folds of MPQA, CR and SUBJ (default: all ten).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p runs
train() { local name=$1 out=$2; shift 2; python -m disan train --threads 1 --out "$out" "$@" > "runs/$name.log" 2> "runs/$name.err"; }

queue_a() {
  train trec checkpoints/trec --task trec --epochs 100 --patience 15 --dropout 0.2
  train sick-e checkpoints/sick-e --task sick-e --epochs 60 --patience 10 --dropout 0.25
  train sick checkpoints/sick --task sick --epochs 60 --patience 10 --dropout 0.25
  train sick-adam runs/sick-adam --task sick --optimizer adam --lr 0.001 --epochs 30 --patience 6 --dropout 0.25
  # the encoders of the paper's Table 1 on one task, side by side
  for enc in disan-nodir bilstm multihead s2t additive; do
    train "trec-$enc" "runs/trec-$enc" --task trec --encoder "$enc" --epochs 100 --patience 15 --dropout 0.2
  done
}
queue_b() {
  train sst5 checkpoints/sst5 --task sst5 --epochs 8 --patience 3 --dropout 0.2
  for fold in ${FOLDS:-0 1 2 3 4 5 6 7 8 9}; do
    for task in mpqa cr subj; do
      train "$task-fold$fold" "runs/$task-fold$fold" --task "$task" --fold "$fold" --epochs 40 --patience 8 --dropout 0.2
    done
  done
}
queue_a & queue_b & wait
