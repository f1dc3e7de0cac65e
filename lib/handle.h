/*
 * handle.h - the handle (struct rlock) and what lock.c, sets.c and
 * history.c do with it for the others.
 */
#ifndef RLOCK_HANDLE_H
#define RLOCK_HANDLE_H

#include "node.h"
#include "request.h"
#include "keys.h"

/* ---- the handle -------------------------------------------------------- */

struct rlock {
	struct rlock_node *node;	/* nnode of them */
	size_t nnode;
	size_t quorum;
	struct rlock_conn_opts copts;
	int64_t hard_deadline;		/* monotonic ms bounding all I/O; 0 none */
	char password[512];
	char prefix[256];
	char host[256];
	char user[64];
	char keybuf[RLOCK_KEY_MAX];
	struct rlock_holder *holders;	/* rlock_status's list */
	size_t nholders;
	struct rlock_member *granted;	/* rlock_granted's members */
	size_t ngranted;
	struct rlock_event last;	/* rlock_status's last run */
	int has_last;
	struct history hist;
	int watching;			/* rlock_watch_open has run */
	char hist_refused[400];		/* why a server refused the history */
	char last_junk[RLOCK_KEY_MAX + 200];	/* rlock_last's note: a
					 * record it ignored, "" none */
	int hist_junk;			/* because its key holds another type */
	struct with_set *with;		/* rlock_with's set, NULL none */
	char err[800];
};

/* Fill n with the names of lock name (docs/design.md#the-keys), or say
 * why it is no lock name (RLOCK_EUSAGE). */
int rl_make_names(struct rlock *rl, const char *name, struct lock_keys *n);

/* ---- the history (lib/history.c) ---- */

/* A release's entry e joined to its grant's entry g: who held it, since
 * when, with which command. */
void rl_history_join_grant(struct rlock_event *e, const struct rlock_event *g);
/* A release whose grant is older than what a script read: its grant
 * looked up in the history, one read. */
void rl_history_join_older(struct rlock *rl, const struct lock_keys *nm,
			   struct rlock_event *e);


/* Several locks (lib/sets.c), which rlock_acquire, rlock_extend and
 * rlock_release hand rl's set to: name is its first. */
int rl_with_acquire(struct rlock *rl, const char *name,
		    const struct rlock_acquire_opts *o, struct rlock_lease *lease,
		    struct rlock_holder *holder);
int rl_with_extend(struct rlock *rl, const char *token, int64_t ttl_ms,
		   struct rlock_lease *lease);
int rl_with_release(struct rlock *rl, const char *token,
		    const struct rlock_lease *lease,
		    const struct rlock_outcome *how);

/* Fill rl->host and rl->user once, before they are first needed. */
void rl_identify(struct rlock *rl);

#endif
