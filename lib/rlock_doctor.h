/*
 * rlock_doctor.h - rlock doctor: can rlock work on these servers, and can
 * they keep a lock safe?  The library runs the checks and returns them as
 * a list; it never prints.  A separate header: users of the lock API never
 * need it.
 */
#ifndef RLOCK_DOCTOR_H
#define RLOCK_DOCTOR_H

#include "rlock.h"

enum rlock_check_level {
	RLOCK_CHECK_OK,
	RLOCK_CHECK_NOTE,	/* worth knowing; nothing to fix */
	RLOCK_CHECK_WARN,	/* rlock works, but a lock may not be safe */
	RLOCK_CHECK_FAIL,	/* rlock cannot work here (see code) */
};

/* What kind of value a check carries, for --json. */
enum rlock_check_value { RLOCK_VALUE_NULL, RLOCK_VALUE_STRING,
			 RLOCK_VALUE_NUMBER };

/* A named number a check states besides its value, for --json: "known"
 * 0 is an unknown (JSON null). */
struct rlock_figure {
	char name[24];
	long long v;
	int known;
};

#define RLOCK_FIGURES_MAX 12

/* One check of one server. */
struct rlock_check {
	char check[24];			/* "reach", "tls", "eviction", ... */
	char server[300];		/* host:port, socket path, sentinels */
	int level;			/* RLOCK_CHECK_* */
	int code;			/* FAIL: why, as an RLOCK_E* code */
	char message[1024];		/* what was found; the fix, if any */
	int value_kind;			/* RLOCK_VALUE_* */
	char value[128];		/* the measured value, as text */
	char product[16];		/* version: "redis", "valkey"; else "" */
	size_t nfigure;			/* failover: the figures stated */
	struct rlock_figure figure[RLOCK_FIGURES_MAX];
};

struct rlock_doctor {
	struct rlock_check *check;	/* n of them, in the order run */
	size_t n, cap;
};

/*
 * Check every server of rl: for each URL its server (for a sentinel URL,
 * each sentinel and the master they name; for a cluster node, every
 * master), then reach, server, rights and the safety of its configuration.
 * name, when not NULL, is a lock name whose prefix and cluster slot the
 * probe lock uses (the probe is another lock whose name starts with it;
 * name's own lock is never touched); NULL makes one up.  The probe leaves
 * no key behind.  Returns RLOCK_OK with d filled (free it with
 * rlock_doctor_free), or RLOCK_ESYS / RLOCK_EUSAGE with rlock_errstr set;
 * servers that fail are checks, not errors.
 */
int rlock_doctor_run(struct rlock *rl, const char *name,
		     struct rlock_doctor *d);

void rlock_doctor_free(struct rlock_doctor *d);

#endif /* RLOCK_DOCTOR_H */
