#!/usr/bin/env bash
# Fills the tbserver-builtin volume: the tables of 3-4 pieces (Job
# tbserver-tables-4, part of kustomization.yaml), then those of 5 pieces, one
# indexed Job per dependency wave, each started when the wave before it has
# completed (a pod of a wave started too early would only fail, naming what
# it lacks). Safe to run again: a wave already complete is skipped, and the
# pods of a Job started again find their tables made and only check them.
# Needs kubectl pointed at the cluster (NAMESPACE, if set, is used).
#
#   deploy/kubernetes/generate-tables.sh
set -euo pipefail
cd "$(dirname "$0")"
kube() { kubectl ${NAMESPACE:+--namespace "$NAMESPACE"} "$@"; }

# The conditions of a Job that hold ("Complete", "Failed"), space-separated.
conditions() {
  kube get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null || true
}

# Waits until Job $1 completes; fails if it fails.
wait_job() {
  while :; do
    case " $(conditions "$1") " in
      *" Complete "*) echo "$1: complete"; return 0 ;;
      *" Failed "*) echo "$1: failed (kubectl describe job/$1; then run this again)" >&2; return 1 ;;
    esac
    sleep 30
  done
}

kube apply -f builtin-pvc.yaml -f tables-4-job.yaml -f tables-5-list.yaml
wait_job tbserver-tables-4
for file in tables-5-wave-*.yaml; do
  job=tbserver-${file%.yaml}
  if [[ " $(conditions "$job") " == *" Complete "* ]]; then
    echo "$job: complete"
    continue
  fi
  # A failed Job (an index that failed three times) is not restarted by apply.
  kube delete job "$job" --ignore-not-found
  kube apply -f "$file"
  wait_job "$job"
done
# Replicas find new tables when probed; restarted, they also advertise 5
# pieces (max_pieces) without Syzygy tables of 5.
kube rollout restart deployment/tbserver
