/*
 * lease.h - a lease's arithmetic (lib/lease.c).
 */
#ifndef RLOCK_LEASE_H
#define RLOCK_LEASE_H

#include <stdint.h>

#include "rlock.h"

/* ---- leases (lib/lease.c) ------------------------------------------- */

/* Whether a grant asked at some moment and confirmed elapsed_ms later is
 * still of use: the TTL less the clock drift allowance must remain. */
int rl_lease_valid(int64_t ttl_ms, int64_t elapsed_ms);
/* A lease of o's kind granted at t0 (CLOCK_BOOTTIME ms, when the request
 * that got it was sent). */
void rl_lease_init(struct rlock_lease *l, const char *token, long long fence,
		   const struct rlock_acquire_opts *o, const char *kind,
		   long long pid, int64_t t0);
/* When the lease may have run out by our clock, and when its next
 * renewal is due (CLOCK_BOOTTIME ms). */
int64_t rl_lease_end(const struct rlock_lease *l);
int64_t rl_lease_renew_at(const struct rlock_lease *l);

#endif
