/*
 * rlock_bench.h - rlock bench, the benchmark of librlock: many clients
 * driven from one thread through the same transport and scripts as the
 * real commands.  A separate header: users of the lock API never need it.
 */
#ifndef RLOCK_BENCH_H
#define RLOCK_BENCH_H

#include "rlock.h"

/* What a bench run is doing when its progress callback is called. */
enum rlock_bench_phase {
	RLOCK_BENCH_SETUP,	/* opening connections */
	RLOCK_BENCH_PING,	/* the PING baseline */
	RLOCK_BENCH_LOCK,	/* acquire/hold/release cycles */
	RLOCK_BENCH_DONE,
};

/*
 * Errors a bench run counts, by kind.  Losing a connection and a request
 * left without a reply for the I/O timeout end the run (RLOCK_EUNAVAIL);
 * error replies are counted and the step is tried again 10ms later.
 */
enum rlock_bench_error {
	RLOCK_BENCH_ERR_CONNECTION,	/* connection lost or closed */
	RLOCK_BENCH_ERR_TIMEOUT,	/* no reply within the I/O timeout */
	RLOCK_BENCH_ERR_OOM,
	RLOCK_BENCH_ERR_READONLY,
	RLOCK_BENCH_ERR_LOADING,
	RLOCK_BENCH_ERR_BUSY,		/* a script ran too long (BUSY) */
	RLOCK_BENCH_ERR_WRONGTYPE,
	RLOCK_BENCH_ERR_OTHER,		/* any other error reply */
	RLOCK_BENCH_ERR_UNEXPECTED,	/* a reply of the wrong shape */
	RLOCK_BENCH_NERR
};

/* Percentiles of one latency, from a log-bucket histogram (16 buckets per
 * power of two: a value is off by at most 1/32 of itself). */
struct rlock_bench_latency {
	long long count;
	double p50_us, p90_us, p99_us, p999_us, max_us, mean_us;
};

/* What a bench run measured.  Filled as the run goes, for progress. */
struct rlock_bench_result {
	enum rlock_bench_phase phase;
	char server[600];		/* address of the server driven */
	int clients, keys;
	int64_t setup_ms;		/* opening the connections */
	/* The PING baseline: bare round trips with the same clients. */
	long long pings;
	double ping_elapsed_s, pings_per_s;
	struct rlock_bench_latency ping;
	/* The lock phase. */
	long long cycles;		/* acquire, hold, release completed */
	double elapsed_s, cycles_per_s;
	double efficiency;		/* cycles/s / (PING/s / 2); 0 unknown */
	long long attempts;		/* acquire requests answered */
	long long busy;			/* of those, answered "held" */
	long long wakeups;		/* wake-ups popped from a waiter's list */
	long long timer_wakeups;	/* waits that ended on their timer (a
					 * pop that timed out): the holder's
					 * TTL, or the beat in line */
	long long batons;		/* grants popped (the release granted
					 * the lock in its script), no request */
	long long noscript;		/* EVALSHA answered NOSCRIPT, sent EVAL */
	struct rlock_bench_latency acquire;	/* one acquire round trip */
	struct rlock_bench_latency release;	/* one release round trip */
	struct rlock_bench_latency wait;	/* start of acquire to grant */
	struct rlock_bench_latency handoff;	/* release sent to the next
						 * waiter's grant, same name */
	long long reacquired;		/* grants to the name's last releaser */
	long long requeued;		/* places in line lost and taken again */
	/* Fairness: cycles per client (fewest, most), clients with none,
	 * and Jain's index of the cycles (1 even; 1/clients one took all). */
	long long turns_min, turns_max, starved;
	double fairness;
	long long abandoned;		/* waits cut short by the end */
	double longest_wait_us;		/* granted or cut short */
	long long errors;
	long long error_kind[RLOCK_BENCH_NERR];
	/* Mutual exclusion.  overlaps: a grant while another client of this
	 * process held the name; not_ours: a release answered "token does
	 * not hold the lock"; fence: a grant whose fence did not increase. */
	long long violations, overlaps, not_ours, fence_regressions;
	double cpu_s;			/* this process, lock phase */
	double server_cpu_s;		/* the server (INFO cpu); < 0 unknown */
	int canceled;			/* cancel_fd stopped the run early */
};

typedef void (*rlock_bench_cb)(const struct rlock_bench_result *now,
			       void *arg);

struct rlock_bench_opts {
	int clients;			/* concurrent clients, >= 1 */
	int keys;			/* lock names, 1..clients; 0: clients */
	long long cycles;		/* total cycles; 0: run for duration_ms */
	int64_t duration_ms;
	int64_t ttl_ms;
	int64_t hold_ms;		/* time held per cycle, below ttl_ms */
	int64_t gap_ms;			/* pause between release and the next
					 * acquire of a client */
	int limit;			/* a semaphore of limit places; 0, 1:
					 * an exclusive lock */
	int shared;			/* shared locks */
	long long ping_count;		/* PING round trips in the baseline, */
	int64_t ping_ms;		/* or its length; both 0: no baseline */
	int cancel_fd;			/* stop early when readable; -1 none */
	rlock_bench_cb progress;	/* about every 200ms; may be NULL */
	void *progress_arg;
};

/*
 * Drive opts->clients clients from this one thread, each with its own
 * non-blocking connection to the handle's server, under one epoll loop:
 * first the PING baseline, then cycles of acquire, hold and release on
 * opts->keys lock names (client i uses name i mod keys) with the same
 * scripts as rlock_acquire and rlock_release, one request at a time per
 * client.  A client told "held" waits as rlock_acquire does: in the
 * name's wait line, popping its own wake-up list (BLPOP) on its one
 * connection, where a release may hand it the lock.  Names are private
 * to the run and their keys are deleted at the end.  Needs a handle with
 * one server.  Returns RLOCK_OK with res filled (violations are reported
 * there, not as a code), RLOCK_EUSAGE, RLOCK_EUNAVAIL when the server
 * cannot be reached or goes away, RLOCK_EPROTO after too many error
 * replies, or RLOCK_ESYS.
 */
int rlock_bench(struct rlock *rl, const struct rlock_bench_opts *opts,
		struct rlock_bench_result *res);

/* A short lower-case name for an rlock_bench_error ("connection"). */
const char *rlock_bench_error_name(int kind);

#endif /* RLOCK_BENCH_H */
