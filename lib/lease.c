/*
 * lease.c - a lease's arithmetic: how long a grant is good for by our own
 * clock (CLOCK_BOOTTIME, which counts a suspend), with a margin for the
 * server's clock running faster than ours, and when it is renewed.
 */
#include <string.h>

#include "lease.h"


int64_t rlock_drift_ms(int64_t ttl_ms)
{
	return ttl_ms / 100 + 2;
}

int64_t rlock_safety_margin_ms(int64_t ttl_ms)
{
	return rlock_drift_ms(ttl_ms) + ttl_ms * 9 / 100;
}

void rl_lease_init(struct rlock_lease *l, const char *token,
		       long long fence, const struct rlock_acquire_opts *o,
		       const char *kind, long long pid, int64_t t0)
{
	rlock_strlcpy(l->token, token, sizeof(l->token));
	l->fence = fence;
	l->ttl_ms = o->ttl_ms;
	l->taken_boot_ms = t0;
	l->renewed_boot_ms = t0;
	l->wait_replicas = o->wait_replicas;
	l->once_ms = o->once_per_ms;
	l->kind = strcmp(kind, "x") == 0 ? 'x' : 'h';
	l->pid = pid;
	l->slot = -1;
	l->first_ms = 0;
}

int64_t rlock_lease_ttl(const struct rlock_lease *l)
{
	int64_t first = __atomic_load_n(&l->first_ms, __ATOMIC_RELAXED);

	return first > 0 ? first : l->ttl_ms;
}

/* When the lease may have run out, by our clock (its safety margin off). */
int64_t rl_lease_end(const struct rlock_lease *l)
{
	int64_t len = rlock_lease_ttl(l);

	return l->renewed_boot_ms + len - rlock_safety_margin_ms(len);
}

/* When its next renewal is due: a third of the lease after the last. */
int64_t rl_lease_renew_at(const struct rlock_lease *l)
{
	return l->renewed_boot_ms + rlock_lease_ttl(l) / 3;
}

int64_t rlock_renewal_in(const struct rlock_lease *lease)
{
	return rl_lease_renew_at(lease) - rlock_boot_ms();
}

int rl_lease_valid(int64_t ttl_ms, int64_t elapsed_ms)
{
	return elapsed_ms < ttl_ms - rlock_drift_ms(ttl_ms);
}
