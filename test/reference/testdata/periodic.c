/*
 * periodic: the reference periodic loop for the Periodic pattern, in C with
 * no runtime of its own. Every period, from absolute CLOCK_MONOTONIC
 * boundaries (clock_nanosleep TIMER_ABSTIME), it spins run ns of its own CPU
 * time (CLOCK_THREAD_CPUTIME_ID). A period is missed when its run ends after
 * the period's end; a run that overruns later boundaries skips them, each
 * counted as missed. It counts the periods that begin in [warmup,
 * warmup+window) after it starts, then prints
 *   periods misses runs cpu_ns
 * usage: periodic RUN_NS PERIOD_NS WARMUP_NS WINDOW_NS
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: periodic RUN_NS PERIOD_NS WARMUP_NS WINDOW_NS\n");
		return 2;
	}
	long long run = atoll(argv[1]), period = atoll(argv[2]);
	long long t0 = now(CLOCK_MONOTONIC);
	long long from = t0 + atoll(argv[3]), to = from + atoll(argv[4]);
	long long b = t0 + period, periods = 0, misses = 0, runs = 0, cpu = 0;
	for (;;) {
		struct timespec ts = {b / 1000000000LL, b % 1000000000LL};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
			;
		if (b >= to)
			break;
		long long c0 = now(CLOCK_THREAD_CPUTIME_ID), c = c0;
		while (c < c0 + run)
			c = now(CLOCK_THREAD_CPUTIME_ID);
		long long f = now(CLOCK_MONOTONIC), next = b + period, skipped = 0;
		int miss = f > b + period;
		if (f >= next) {
			skipped = (f - b) / period;
			next = b + (skipped + 1) * period;
		}
		if (b >= from) {
			runs++;
			periods += 1 + skipped;
			misses += miss + skipped;
			cpu += c - c0;
		}
		b = next;
	}
	printf("%lld %lld %lld %lld\n", periods, misses, runs, cpu);
	return 0;
}
