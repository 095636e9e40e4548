#!/usr/bin/env bash
# latency-vs-cyclictest.sh: schedlab's LatencyProbe against cyclictest
# (Debian's rt-tests) on the same load, at the same time.
#
# For each phase it runs, side by side for SECONDS:
#   - our LatencyProbe: one worker process sleeping with clock_nanosleep
#     (CLOCK_MONOTONIC, TIMER_ABSTIME) to deadlines every INTERVAL_US, as
#     internal/nodeagent/workload's TestLatencyProbeReport;
#   - cyclictest -m [-n] -i INTERVAL_US -l LOOPS -q -h MAX_US: one thread,
#     SCHED_OTHER (no -p), clock_nanosleep on CLOCK_MONOTONIC (-n on
#     rt-tests before 2.0; clock_nanosleep is the default since, and 2.x
#     rejects -n);
# and prints both medians (p50) and whether ours is within 30% of
# cyclictest's.
#
# Phases: "idle" (whatever else the machine runs) and "hogs" (stress-ng
# --cpu NCPUS: one always-runnable task per CPU). Exit status 1 when a
# phase's medians differ by more than 30%.
#
# Usage: hack/latency-vs-cyclictest.sh [SECONDS [INTERVAL_US]]
#   environment: PHASES="idle hogs" (the default), TOLERANCE=0.30
# Needs root for apt-get (rt-tests and stress-ng are installed if missing)
# and for mlockall without limits.
set -euo pipefail

SECONDS_PER_PHASE=${1:-20}
INTERVAL_US=${2:-1000}
PHASES=${PHASES:-"idle hogs"}
TOLERANCE=${TOLERANCE:-0.30}
MAX_US=20000 # cyclictest's histogram range (1µs buckets); overflows are counted

cd "$(dirname "$0")/.."

need=()
command -v cyclictest >/dev/null || need+=(rt-tests)
command -v stress-ng >/dev/null || need+=(stress-ng)
if ((${#need[@]})); then
	echo "installing ${need[*]}" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

work=$(mktemp -d)
load_pid=""
cleanup() {
	if [[ -n $load_pid ]]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# Build the test binary once, so that compiling is not part of the load.
go test -c -o "$work/workload.test" ./internal/nodeagent/workload
loops=$(awk -v s="$SECONDS_PER_PHASE" -v i="$INTERVAL_US" 'BEGIN { printf "%d", s * 1e6 / i }')
ncpu=$(nproc)
nanosleep_flag=()
if cyclictest --help 2>&1 | grep -qE '^-n[[:space:]]'; then nanosleep_flag=(-n); fi
cyc_version=$(cyclictest --help 2>&1 | sed -n 's/^cyclictest V \(.*\)/\1/p' | head -1)

# cyclictest's -h histogram: lines "BUCKET_US COUNT"; a percentile is the
# first bucket where the running count reaches it (overflows count as above
# the range, shown as ">MAX_US"). Prints p50 p99 total.
cyclictest_percentiles() {
	awk -v max="$MAX_US" '
		/^# Histogram Overflows/ { ov = $4 + 0 }
		/^[0-9]+[ \t]+[0-9]+/ { n++; us[n] = $1 + 0; c[n] = $2 + 0; total += $2 }
		function pct(q,   k, run) {
			run = 0
			for (k = 1; k <= n; k++) { run += c[k]; if (run >= q * total) return us[k] }
			return ">" max
		}
		END { total += ov; printf "%s %s %d\n", pct(0.50), pct(0.99), total }' "$1"
}

status=0
printf '%-6s %9s %9s %9s %9s %9s %9s %6s %s\n' phase ours_p50 cyc_p50 ours_p99 cyc_p99 ours_max cyc_max diff "verdict (p50)"
for phase in $PHASES; do
	case $phase in
	idle) ;;
	hogs)
		stress-ng --cpu "$ncpu" --cpu-method loop --timeout $((SECONDS_PER_PHASE + 10))s --quiet &
		load_pid=$!
		sleep 1
		;;
	*) echo "unknown phase $phase" >&2; exit 2 ;;
	esac
	SCHEDLAB_LATENCY_REPORT_SECONDS=$SECONDS_PER_PHASE SCHEDLAB_LATENCY_REPORT_INTERVAL_US=$INTERVAL_US \
		"$work/workload.test" -test.run '^TestLatencyProbeReport$' -test.count=1 >"$work/ours.$phase" 2>&1 &
	ours_pid=$!
	cyclictest -m "${nanosleep_flag[@]}" -i "$INTERVAL_US" -l "$loops" -q -h "$MAX_US" >"$work/cyc.$phase" 2>&1
	wait "$ours_pid" || { cat "$work/ours.$phase" >&2; exit 1; }
	if [[ -n $load_pid ]]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; load_pid=""; fi

	line=$(grep '^schedlab-latency ' "$work/ours.$phase") || { cat "$work/ours.$phase" >&2; exit 1; }
	get() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$line"; }
	ours_p50=$(get p50_us) ours_p99=$(get p99_us) ours_max=$(get max_us) ours_n=$(get count)
	read -r cyc_p50 cyc_p99 cyc_n < <(cyclictest_percentiles "$work/cyc.$phase")
	cyc_max=$(awk '/^# Max Latencies/ { print $4 + 0 }' "$work/cyc.$phase")
	verdict=$(awk -v a="$ours_p50" -v b="$cyc_p50" -v tol="$TOLERANCE" 'BEGIN {
		if (b + 0 <= 0) { print "inf% OUTSIDE"; exit }
		d = (a - b) / b; if (d < 0) d = -d
		printf "%.0f%% %s", 100 * d, (d <= tol ? "within" : "OUTSIDE") }')
	printf '%-6s %9s %9s %9s %9s %9s %9s %6s %s\n' "$phase" "$ours_p50" "$cyc_p50" "$ours_p99" "$cyc_p99" "$ours_max" "$cyc_max" ${verdict% *} "${verdict#* } $(awk -v t="$TOLERANCE" 'BEGIN{printf "%d%%", 100*t}') (samples: ours $ours_n, cyclictest $cyc_n)"
	[[ $verdict == *within* ]] || status=1
done
echo "(µs; ours_* from schedlab's LatencyProbe, cyc_* from cyclictest $cyc_version -m ${nanosleep_flag[*]} -i $INTERVAL_US -q -h $MAX_US, SCHED_OTHER; $SECONDS_PER_PHASE s per phase, $ncpu CPUs, $(uname -r))"
exit $status
