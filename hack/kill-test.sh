#!/usr/bin/env bash
# kill-test.sh — SIGKILL `schedlab run` at random points and check that the
# next agent (`schedlab run --restore-only`) puts this machine back exactly
# as it was: every catalogue knob, the cgroup tree of the cpu controller, and
# no surviving worker. Needs root. Usage: hack/kill-test.sh [TRIALS] (20).
set -euo pipefail
trials=${1:-20}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "keeping $work"
go build -o "$work/schedlab" ./cmd/schedlab
bin=$work/schedlab

cat >"$work/exp.yaml" <<'YAML'
apiVersion: schedlab.io/v1alpha1
kind: SchedExperiment
metadata: {name: kill-test}
spec:
  nodeSelector: {matchLabels: {schedlab.io/pool: lab}}
  duration: 300ms
  warmup: 100ms
  repetitions: 2
  variants:
  - {name: off, knobs: {autogroup: Disabled, sysctls: {kernel.sched_rr_timeslice_ms: "50"}}}
  - {name: on, knobs: {autogroup: Enabled}}
  workload:
    groups:
    - {name: pods, tasks: 0, cpuWeight: 50}
    - {name: hog, replicas: 2, tasks: 2, parent: pods, cpuWeight: 200, pattern: {type: Hog}}
    - {name: shell, session: s1, pattern: {type: Hog}}
YAML

cgmount=$(awk '$9=="cgroup" && $NF ~ /(^|,)cpu(,|$)/ {print $5; exit} $9=="cgroup2" {print $5}' /proc/self/mountinfo | head -1)
state() { # read under the node lock, so that no other schedlab run is half-way
  exec 9</sys/fs/cgroup
  flock 9
  for f in /proc/sys/kernel/sched_autogroup_enabled /proc/sys/kernel/sched_rr_timeslice_ms; do echo "$f=$(cat $f)"; done
  find "$cgmount" -mindepth 1 -maxdepth 3 -type d | sort
  exec 9<&-
}
workers() { # live processes carrying SCHEDLAB_WORKER=<run>.*
  for e in /proc/[0-9]*/environ; do
    if tr "\\0" "\\n" 2>/dev/null <"$e" | grep -q "^SCHEDLAB_WORKER=$1\."; then
      p=${e#/proc/}; p=${p%/environ}
      [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" != Z ] && echo "$p"
    fi
  done | sort -u
}

before=$(state)
fail=0
for i in $(seq 1 "$trials"); do
  sd=$work/state-$i run=kill-$$-$i
  "$bin" run -f "$work/exp.yaml" --wait 5m --state-dir "$sd" --run-id "$run" -o json >"$work/out-$i" 2>&1 &
  pid=$!
  delay=$(awk -v s=$RANDOM 'BEGIN{srand(s); printf "%.2f", rand()*4}')
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  journal=no; [ -e "$sd/journal.json" ] && journal=yes
  if ! "$bin" run --restore-only --wait 5m --state-dir "$sd" 2>"$work/restore-$i"; then
    echo "trial $i: restore failed:"; cat "$work/restore-$i"; fail=1
    trap - EXIT; echo "keeping $work (journals in its state-* directories)"
    sleep 1; "$bin" run --restore-only --wait 5m --state-dir "$sd" || true  # second chance, so the machine is not left changed
  fi
  after=$(state)
  left=$(workers "$run")
  status=ok
  if [ "$after" != "$before" ]; then
    status="CHANGED"; diff <(echo "$before") <(echo "$after") || true; fail=1
    trap - EXIT; echo "keeping $work"; echo "agent output:"; cat "$work/out-$i"
  fi
  if [ -n "$left" ]; then status="$status, workers survive: $left"; kill -KILL $left 2>/dev/null || true; fail=1; fi
  printf 'trial %2d: SIGKILL after %ss, journal left: %s → %s\n' "$i" "$delay" "$journal" "$status"
done
[ $fail = 0 ] && echo "all $trials trials: restored, no worker left" || { echo "FAILED"; exit 1; }
