/*
 * probe: a reference wake-up latency probe in C with no runtime and no
 * other thread (cyclictest has a main thread that wakes every 10 ms). It
 * sleeps to absolute CLOCK_MONOTONIC deadlines every interval
 * (clock_nanosleep TIMER_ABSTIME, SCHED_OTHER, the default timer slack) and
 * records how late it woke, in µs, for the deadlines in [warmup,
 * warmup+window) after it starts; deadlines already passed are skipped, as
 * the LatencyProbe does. With PHASE_NS the deadlines lie on CLOCK_MONOTONIC
 * multiples of the interval plus PHASE_NS (the LatencyProbe's Task.PhaseNs,
 * cyclictest's --secaligned), so that tools run side by side do not share
 * timer interrupts. It prints
 *   wakeups p50_us p99_us max_us late
 * where late is the number of wake-ups 250 µs or more late.
 * usage: probe INTERVAL_NS WARMUP_NS WINDOW_NS [PHASE_NS]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_US 100000

static long long hist[MAX_US + 1];

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: probe INTERVAL_NS WARMUP_NS WINDOW_NS [PHASE_NS]\n");
		return 2;
	}
	long long iv = atoll(argv[1]), t0 = now();
	long long from = t0 + atoll(argv[2]), to = from + atoll(argv[3]);
	long long d = t0 + iv, n = 0;
	if (argc == 5)
		d = (d / iv + 1) * iv + atoll(argv[4]);
	while (d < to) {
		struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		long long t = now(), us = (t - d) / 1000;
		if (d >= from) {
			hist[us > MAX_US ? MAX_US : us]++;
			n++;
		}
		for (d += iv; d <= t; d += iv)
			;
	}
	long long c = 0, p50 = -1, p99 = -1, max = 0, late = 0;
	for (long long i = 0; i <= MAX_US; i++) {
		c += hist[i];
		if (i >= 250)
			late += hist[i];
		if (hist[i])
			max = i;
		if (p50 < 0 && 2 * c >= n)
			p50 = i;
		if (p99 < 0 && 100 * c >= 99 * n)
			p99 = i;
	}
	printf("%lld %lld %lld %lld %lld\n", n, p50, p99, max, late);
	return 0;
}
