/*
 * rlock.h - the public interface of librlock: leases on a lock held in one
 * or more Redis servers.  The library never prints, exits or installs a
 * signal handler; every call returns an RLOCK_* code and keeps a one-line
 * message in the handle (rlock_errstr).
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

/* The OpenSSL library that the first rediss:// URL loads with dlopen. */
#define RLOCK_TLS_LIBRARY "libssl.so.3"

#define RLOCK_TOKEN_LEN 32		/* 128 bits as lower-case hex */
#define RLOCK_NAME_MAX 1024		/* bytes in a lock name */
#define RLOCK_KEY_MAX (RLOCK_NAME_MAX + 300)	/* prefix{name}: the lock's key */
#define RLOCK_LABEL_MAX 256		/* bytes of the command shown by status */
#define RLOCK_NOTE_MAX 256		/* bytes of a holder's note */
#define RLOCK_LIMIT_MAX 100000		/* places of a semaphore (--limit) */
#define RLOCK_COUNT_MAX 64		/* members of a pool one holder takes */
#define RLOCK_MEMBER_MAX 256		/* bytes in a pool member's name */
#define RLOCK_PROP_KEY_MAX 64		/* bytes in a member's property key */
#define RLOCK_PROPS_MAX 4096		/* bytes of a member's properties */
#define RLOCK_MEMBERS_MAX 1024		/* bytes of a holder's members shown
					 * (status, log), one a line */
#define RLOCK_JUNK_MAX 200		/* a note of a field rlock did not
					 * write, "what 'value'" */
#define RLOCK_MAX_SERVERS 16		/* independent masters of a handle */
#define RLOCK_LOG_MAX_DEFAULT 1000	/* history entries kept per lock */
#define RLOCK_LOG_DAYS_DEFAULT 30	/* days a history outlives its last entry */
#define RLOCK_TTL_MIN_MS 10
#define RLOCK_TTL_MAX_MS (30LL * 24 * 3600 * 1000)

/* Why an acquire gave up at once, with its reason in rlock_errstr. */
enum rlock_skip {
	RLOCK_SKIP_SUPERSEDED = 1,	/* a newer --supersede waiter took
					 * its place */
	RLOCK_SKIP_DONE,		/* --once-per: this period is done */
};

/* Result codes of every call.  The CLI maps them to exit statuses. */
enum rlock_code {
	RLOCK_OK = 0,
	RLOCK_BUSY,		/* held by another token (or -w ran out) */
	RLOCK_NOTOURS,		/* the token does not hold the lock */
	RLOCK_LOST,		/* the lease ran out without confirmation */
	RLOCK_CANCELED,		/* the cancel descriptor became readable */
	RLOCK_EUSAGE,		/* bad argument: name, URL, duration */
	RLOCK_EUNAVAIL,		/* connect, auth, timeout, READONLY, OOM, quorum */
	RLOCK_EPROTO,		/* unexpected reply, WRONGTYPE, script error */
	RLOCK_ESYS,		/* a system call failed */
	RLOCK_ENOPERM,		/* refused by the server's ACL (NOPERM) */
};

/* How to reach the servers.  Strings are copied by rlock_new. */
struct rlock_config {
	const char *const *urls;	/* one server, or N >= 3 for Redlock */
	size_t nurls;
	const char *prefix;		/* key prefix, NULL for "rlock:" */
	int64_t connect_timeout_ms;	/* <= 0 for 2000 */
	int64_t io_timeout_ms;		/* <= 0 for 2000 */
	const char *password;		/* beats the URL's password when set */
	/* TLS for rediss:// URLs; NULL for the defaults (the system's
	 * trust store, no client certificate, the URL's host as name). */
	const char *tls_cacert, *tls_cacertdir, *tls_cert, *tls_key;
	const char *tls_sni;
	int tls_insecure;		/* verify neither chain nor name */
	/* For redis-sentinel:// URLs: the sentinels' own credentials (the
	 * URL's and password above are the master's).  NULL: none. */
	const char *sentinel_user, *sentinel_password;
	/* The history (rlock_log): about log_max entries per lock (0 for
	 * RLOCK_LOG_MAX_DEFAULT), kept log_days after the last (0 for
	 * RLOCK_LOG_DAYS_DEFAULT); no_log records nothing. */
	long log_max;
	int log_days;
	int no_log;
};

/* What a server says of a lock, for status and for a waiter's live line. */
struct rlock_holder {
	int held;			/* 1 held, 0 free */
	char token_prefix[9];		/* first 8 hex digits, never the token */
	char host[256];
	long long pid;
	char user[64];
	char command[RLOCK_LABEL_MAX + 1];
	char note[RLOCK_NOTE_MAX + 1];	/* status only */
	long long fence;		/* current value of the fence counter */
	long long since_ms;		/* wall clock ms since epoch, 0 unknown */
	long long age_ms;		/* server time minus since_ms */
	long long ttl_ms;		/* PTTL of the lock key, -1 no expiry */
	long long waiters;		/* waiting in line (several masters:
					 * subscribers of the release channel;
					 * -1 unknown, PUBSUB refused) */
	int shared;			/* held by shared holders */
	int limit;			/* a semaphore's limit; 1 exclusive */
	int pool;			/* held by a pool's holders */
	long long nholders;		/* holders (shared, semaphore) */
	long long place;		/* a waiter's own place in line: 0
					 * next, -1 not in line */
	const char *unreachable;	/* a waiter's callback: why the
					 * servers do not answer while it tries
					 * again (its place as last known);
					 * NULL when they answer */
	int slot;			/* status's list of holders: a
					 * semaphore holder's slot, -1 none or
					 * unknown (junk says) */
	char members[RLOCK_MEMBERS_MAX + 1];	/* status's list of
					 * holders: a pool holder's members,
					 * one a line */
	int skip;			/* why a busy answer is final (enum
					 * rlock_skip), 0 none */
	long long junk_keys;		/* release --force: keys of another
					 * type it deleted */
	char junk[RLOCK_JUNK_MAX];	/* the first field that did not
					 * decode (another client's data), as
					 * "what 'value'" (raw: escape it to
					 * show it); "" none.
					 * Its value is unknown: 0, or -1 for
					 * a fence (limit 0: a kind unknown) */
	struct rlock_waiter {		/* the next in line, for status */
		int present;
		int shared, limit;
		int pool;		/* a pool's waiter: the members it
					 * asks for (--count), 0 none */
		int priority;
		long long pid;
		long long waited_ms;
		char host[256];
		char user[64];
		char command[RLOCK_LABEL_MAX + 1];
	} next;
	struct rlock_once {		/* --once-per: the period done, for
					 * status */
		int present;
		char host[256];
		char user[64];
		long long pid, fence;
		long long since_ms, done_ms;	/* the run, wall-clock ms */
		long long until_ms;	/* the period's end */
		long long period_ms;	/* its length (--once-per) */
	} once;
};

/* A lease we hold: filled by rlock_acquire, read by extend and release. */
struct rlock_lease {
	char token[RLOCK_TOKEN_LEN + 1];
	long long fence;
	int64_t ttl_ms;
	int64_t taken_boot_ms;		/* CLOCK_BOOTTIME when the grant was asked */
	int64_t renewed_boot_ms;	/* CLOCK_BOOTTIME of the last confirmed send */
	int wait_replicas;		/* renewals WAIT for N replicas too */
	int64_t once_ms;		/* --once-per: a release after the work
					 * ended well marks the period done */
	int kind;			/* 'x' exclusive, 'h' a shared or
					 * semaphore holder; 0 unknown */
	long long pid;			/* the holder's pid as recorded */
	int slot;			/* a semaphore's slot 0..limit-1
					 * (RLOCK_SLOT), -1 none */
	int64_t first_ms;		/* a first lease shorter than ttl_ms
					 * (a baton's, taken from its wake-up
					 * without asking) until the first
					 * renewal; 0 none */
};

/* How the work done under a lock ended, for the history. */
struct rlock_outcome {
	int exit;			/* exit status 0..255, -1 not known */
	int signal;			/* the signal that ended it, 0 none */
	int abandoned;			/* the process that held it died
					 * without releasing (acquire --renew's
					 * renewer): never a success */
};

/* Called by a waiting acquire about once a second (or every wait_cb_ms
 * of the options) and when the holder changes, so that the caller can
 * show a status line. */
typedef void (*rlock_wait_cb)(const struct rlock_holder *holder,
			      int64_t waited_ms, void *arg);

struct rlock_acquire_opts {
	int64_t ttl_ms;
	int64_t wait_ms;		/* 0: try once; < 0: wait forever */
	const char *token;		/* NULL: make a fresh one */
	const char *label;		/* shown as the holder's command */
	const char *note;		/* shown and recorded; NULL none */
	int64_t min_hold_ms;		/* a release before this keeps the key */
	long long pid;			/* shown as the holder's pid; 0: ours */
	int wait_replicas;		/* WAIT until N replicas have the grant */
	int shared;			/* a shared lock (-s) */
	int limit;			/* a semaphore of limit holders; 0, 1:
					 * exclusive */
	int count;			/* a pool's holder: take count of its
					 * members (the lock is the pool); 0
					 * none (rlock_granted) */
	int cancel_fd;			/* stop waiting when readable; -1 none */
	/* The line's policies (one server): higher priority first
	 * (-100..100); supersede: take the place of the waiter in line
	 * that also gave it (it gives up with RLOCK_SKIP_SUPERSEDED);
	 * once_per_ms: at most one run that ends well per period of the
	 * server's clock (an exclusive lock; RLOCK_SKIP_DONE). */
	int priority;
	int supersede;
	int64_t once_per_ms;
	rlock_wait_cb wait_cb;
	void *wait_arg;
	/* How often to call wait_cb, in ms: 0 about once a second (a live
	 * line, the holder's details asked on every try); more, never sooner
	 * than that after its last call, the wait woken for it no more often
	 * and the details asked only on the try it is due at (a line in a CI
	 * log every 30s costs no try a second). */
	int64_t wait_cb_ms;
	/* Let the release that frees the lock grant it to us when we are
	 * first in line (one server, exclusive, no --once-per or
	 * wait_replicas): nobody barges in between, and the request its
	 * wake-up makes us send finds our own token and renews it to the
	 * full TTL, the server's confirmation that we hold it. */
	int baton;
	/* Several locks at once (--with): the names taken with NAME, for
	 * the caller's rlock_with; the library does not read these. */
	const char *const *with;
	size_t nwith;
};

struct rlock;

/*
 * Several locks held together (--with): after rlock_with(rl, names, n),
 * rlock_acquire of names[0] takes all n at once or none (exclusive, on one
 * server: a Cluster only where every name's keys share a slot), with one
 * token and lease; rlock_extend, rlock_renew, rlock_keepalive and
 * rlock_release of names[0] act on every one.  At most RLOCK_WITH_MAX
 * names, distinct.  Returns RLOCK_OK, or RLOCK_EUSAGE with the reason.
 */
#define RLOCK_WITH_MAX 16
int rlock_with(struct rlock *rl, const char *const *names, size_t n);

/* After rlock_acquire of a set: the fence of its name i (0..n-1). */
long long rlock_with_fence(const struct rlock *rl, size_t i);

/* After rlock_acquire of a set found it busy: the name of the lock of the
 * set whose holder it filled in, or NULL when none (the locks are free
 * but others in line come first, or held by shared holders). */
const char *rlock_with_busy(const struct rlock *rl);

/* A set as its record keeps it, while it holds: its token (never shown),
 * its names in order and their fences. */
struct rlock_with {
	char token[RLOCK_TOKEN_LEN + 1];
	size_t n;
	char name[RLOCK_WITH_MAX][RLOCK_NAME_MAX + 1];
	long long fence[RLOCK_WITH_MAX];
};

/*
 * The set lock name is held with, from its record (one server): out->n 0
 * when none.  The record lives as long as the set's lease: the caller
 * compares its token with the holder's (a lock removed by force and taken
 * since leaves one that is not the holder's).  A record that does not decode is RLOCK_EPROTO.  Returns
 * RLOCK_OK or an error code.
 */
int rlock_with_read(struct rlock *rl, const char *name, struct rlock_with *out);

/* Hand rl the set of record w (rlock_with_read, whose token the caller
 * found its own), with the fence of each lock: a renewer, an extend or a
 * release that did not take the set acts on all of it, and a loss is
 * recorded in every lock's history with its fence.  Returns RLOCK_OK, or
 * an error code with the reason. */
int rlock_with_adopt(struct rlock *rl, const struct rlock_with *w);

/* Whether opts can be asked of these servers: shared locks, semaphores
 * and the line's policies need one (several masters keep no line); a
 * --once-per an exclusive lock.  Returns RLOCK_OK, or RLOCK_EUSAGE with
 * the reason in rlock_errstr.  rlock_acquire checks the same. */
int rlock_check_acquire(struct rlock *rl,
			const struct rlock_acquire_opts *o);

/* What opts ask for as the lock's keys record it: "x" exclusive, "s"
 * shared, or a semaphore's limit in decimal (buf: 24 bytes will do). */
const char *rlock_kind(const struct rlock_acquire_opts *o, char *buf,
		       size_t len);

/*
 * Create a handle for cfg.  No connection is made until the first call that
 * needs one; a rediss:// URL loads OpenSSL and its certificates here.  On
 * failure returns NULL, sets *code (RLOCK_EUSAGE for a bad URL or prefix,
 * RLOCK_EUNAVAIL for TLS set-up, RLOCK_ESYS) and writes a one-line reason
 * to err.
 */
struct rlock *rlock_new(const struct rlock_config *cfg, int *code, char *err,
			size_t errlen);

/* Close the handle's connections and free it.  Accepts NULL. */
void rlock_free(struct rlock *rl);

/* The one-line message of the last failed call on rl. */
const char *rlock_errstr(const struct rlock *rl);

/* The full Redis key of lock name under the handle's prefix, "P{name}". */
const char *rlock_key(struct rlock *rl, const char *name);

/*
 * Check that name is usable as a lock name: 1..1024 bytes, no control
 * characters.  Returns RLOCK_OK or RLOCK_EUSAGE with a reason in why.
 */
int rlock_check_name(const char *name, const char **why);

/* ---- pools (lib/pool.c) ------------------------------------------------ */

/* A pool's member: its name and properties, and for rlock_pool_list who
 * holds it. */
struct rlock_member {
	char name[RLOCK_MEMBER_MAX + 1];
	/* "KEY=VALUE" lines, each as rlock_check_prop allows */
	char props[RLOCK_PROPS_MAX + 1];
	int removed;			/* list: held, but no longer a member */
	int held;			/* list: a live holder has it */
	struct rlock_holder holder;	/* list: who, when held */
};

/* Check a member's name: 1..RLOCK_MEMBER_MAX bytes, no control
 * characters.  Returns RLOCK_OK or RLOCK_EUSAGE with a reason in why. */
int rlock_check_member(const char *name, const char **why);

/*
 * Check a property "KEY=VALUE": KEY 1..RLOCK_PROP_KEY_MAX bytes of ASCII
 * letters, digits and '_', not starting with a digit (the command gets it
 * as RLOCK_RESOURCE_KEY, upper-cased), VALUE without control characters.
 * Returns RLOCK_OK or RLOCK_EUSAGE with a reason in why.
 */
int rlock_check_prop(const char *kv, const char **why);

/* Add member to pool with props (KEY=VALUE lines, "" none), replacing its
 * properties if it is one already (*added 0; 1 new), and wake the pool's
 * waiters.  One server.  Returns RLOCK_OK or an error code. */
int rlock_pool_add(struct rlock *rl, const char *pool, const char *member,
		   const char *props, int *added);

/* Remove member from pool (*removed 0: it was none).  A holder keeps it
 * until it lets it go: *holder says who (held 0: none).  Returns RLOCK_OK
 * or an error code. */
int rlock_pool_rm(struct rlock *rl, const char *pool, const char *member,
		  int *removed, struct rlock_holder *holder);

/* The members of pool, in name order, then the members removed while held;
 * *list is malloc'd (free it).  Returns RLOCK_OK or an error code. */
int rlock_pool_list(struct rlock *rl, const char *pool,
		    struct rlock_member **list, size_t *n);

/* The members the last successful rlock_acquire of a pool (opts count)
 * was given, first the one named first; 0 after any other grant. */
size_t rlock_granted(const struct rlock *rl,
		     const struct rlock_member **list);

/*
 * Take lock name: exclusive, shared (opts->shared) or one of opts->limit
 * places of a semaphore.  Tries once; if it is held and opts->wait_ms
 * allows, takes a place in the lock's wait line (one server: several
 * masters keep none) and tries again when woken, when the holder's lease
 * runs out, and every LINE_BEAT_MS to keep its place; a wait that ends
 * without the lock leaves the line.  A retry with the same token finds its
 * own grant.  Returns RLOCK_OK with lease filled, RLOCK_BUSY (holder
 * filled when not NULL), RLOCK_CANCELED, RLOCK_EUSAGE when the holders'
 * kind or limit disagrees with ours, or an error code.
 */
int rlock_acquire(struct rlock *rl, const char *name,
		  const struct rlock_acquire_opts *opts,
		  struct rlock_lease *lease, struct rlock_holder *holder);

/*
 * Push the expiry of the lease held by token to ttl_ms from now.  Returns
 * RLOCK_OK, RLOCK_NOTOURS when token does not hold the lock, or an error.
 * lease may be NULL; when given its renewed_boot_ms and ttl_ms are updated.
 */
int rlock_extend(struct rlock *rl, const char *name, const char *token,
		 int64_t ttl_ms, struct rlock_lease *lease);

/* Several masters: why the first server that answered could not be
 * identified, and so had no vote in the last request, or NULL. */
const char *rlock_unidentified(const struct rlock *rl);

/*
 * Whether token holds lock name (kind 'x' exclusive first, 'h' a shared,
 * semaphore or pool holder only), on a quorum of the servers; writes
 * nothing.  Returns RLOCK_OK, RLOCK_NOTOURS, or an error.
 */
int rlock_holds(struct rlock *rl, const char *name, const char *token,
		int kind);

/*
 * Renew lease to its ttl_ms, waiting for the server no longer than the
 * lease may last (its safety margin aside).  Returns as rlock_extend, or
 * RLOCK_LOST when the lease may have run out already.
 */
int rlock_renew(struct rlock *rl, const char *name, struct rlock_lease *lease);

/* The ms until lease is due for renewal (a third of its TTL after the
 * last, as rlock_keepalive renews), 0 or less when it is due: at once for
 * one a release handed over.  On CLOCK_BOOTTIME. */
int64_t rlock_renewal_in(const struct rlock_lease *lease);
/* The length of the lease now: its first when that is shorter (a baton's,
 * until the first renewal), else its TTL. */
int64_t rlock_lease_ttl(const struct rlock_lease *lease);

/*
 * Make rl ready to watch and renew the lock on name: learn a cluster's map
 * (one CLUSTER SLOTS; a server that is no cluster answers with an error),
 * so that when the node the URL names dies the others tell where its slots
 * went, and open the connections renewing it uses, within the lease.
 * rlock_keepalive does it first if it was not done.
 */
void rlock_watch_open(struct rlock *rl, const char *name,
		      const struct rlock_lease *lease);

/*
 * Watch the connections a lock was taken on from the caller's own poll,
 * for the stretch before a renewal is due: rlock_watch_fds writes the
 * descriptors of rl's idle command connections (-1 for one that is
 * closed), one per server (at most RLOCK_MAX_SERVERS), and returns how
 * many.  When descriptor i polls readable, rlock_watch_dropped(rl, i,
 * revents) returns 1 if the server closed it (a restart, a crash, a
 * failover: the lease is worth checking now), else 0.
 */
size_t rlock_watch_fds(const struct rlock *rl, int *fds);
int rlock_watch_dropped(struct rlock *rl, size_t i, short revents);

/*
 * Give up the lock held by token, recording how (NULL: not known) in the
 * history.  A lease taken with min_hold_ms is left
 * to expire at the end of that time instead of being deleted; the server
 * judges this, so any client's release honours it.  lease, when given, is
 * the lease token holds: if the connection dropped after the request was
 * sent and the retry finds the lock gone while the lease was still ours by
 * our clock, the first request did the release and RLOCK_OK is returned.
 * Returns RLOCK_OK, RLOCK_NOTOURS when token does not hold it, or an error.
 */
int rlock_release(struct rlock *rl, const char *name, const char *token,
		  const struct rlock_lease *lease,
		  const struct rlock_outcome *how);

/*
 * Remove the lock whoever holds it, and any of its keys that holds another
 * type than rlock keeps there (was->junk_keys of them); was gets the holder
 * it had (held 0 when none).  Returns RLOCK_OK, RLOCK_NOTOURS when it was
 * free and clean, or an error.
 */
int rlock_force_release(struct rlock *rl, const char *name,
			struct rlock_holder *was);

/* What one server says of a lock, for status with several servers. */
struct rlock_view {
	char addr[256];			/* host:port or socket path */
	int state;			/* RLOCK_VIEW_* */
	struct rlock_holder holder;	/* held: its holder; free: the fence */
	char error[512];		/* RLOCK_VIEW_ERROR: why */
};

enum { RLOCK_VIEW_FREE, RLOCK_VIEW_HELD, RLOCK_VIEW_ERROR };

/* The number of servers of the handle (1, or N >= 3 for Redlock). */
size_t rlock_nservers(const struct rlock *rl);

/*
 * Fill out with what the servers say of lock name: held when a quorum
 * holds it, with the holder of the highest fence.  each, when not NULL,
 * gets rlock_nservers() views, one per server in URL order.  Returns
 * RLOCK_OK or an error when no quorum answered; a free lock is RLOCK_OK
 * with out->held == 0.
 */
int rlock_status(struct rlock *rl, const char *name, struct rlock_holder *out,
		 struct rlock_view *each);

/*
 * After rlock_status on a lock of shared or semaphore holders: each of
 * them (up to 100), in the order their leases end.  Returns how many; the
 * list lives until the next rlock_status or rlock_free.
 */
size_t rlock_status_holders(const struct rlock *rl,
			    const struct rlock_holder **list);

/* ---- the history ----------------------------------------------------- */

/* One entry of a lock's history (docs/design.md#the-history). */
struct rlock_event {
	char id[48];			/* the stream entry's id */
	char event[16];			/* acquired, released, abandoned, lost,
					 * stepped-down, skipped, forced */
	long long time_ms;		/* server clock, ms since the epoch */
	char host[256];
	char user[64];
	long long pid;			/* -1: not known */
	char kind[24];			/* "x", "s" or a semaphore's limit */
	long long fence;		/* -1: not known */
	long long slot;			/* a semaphore's slot, -1 none or not
					 * known */
	char members[RLOCK_MEMBERS_MAX + 1];	/* a pool holder's
					 * members, one a line; "" none */
	char token[9];			/* the holder's token prefix */
	long long waited_ms, held_ms;	/* -1: not known */
	long long since_ms;		/* when the lock was taken, -1 unknown */
	int exit;			/* -1: not known */
	char signal[16];		/* "TERM"; "" none */
	char reason[320];
	char command[RLOCK_LABEL_MAX + 1];
	char note[RLOCK_NOTE_MAX + 1];
	char with[1024];		/* a grant of several locks (--with):
					 * the others, one a line; "" none */
	int servers;			/* how many servers recorded it */
	unsigned from;			/* which: bit i, server i */
	int trimmed;			/* known only from the record of the
					 * last runs (last): its time, and that
					 * it ended well; the entry with the
					 * rest has been trimmed */
	unsigned bad;			/* fields that did not decode (another
					 * client's data), bit (1 << EV_X) of
					 * lock_int.h's order: their values
					 * are unknown */
	char junk[RLOCK_JUNK_MAX];	/* the first, "what 'value'" (raw) */
};

/* Where a reader of the history left off, per server (rlock_log_follow). */
struct rlock_log_cursor {
	char id[16][48];
	char seen[64][32];		/* several masters: events shown */
	unsigned nseen;
};

/*
 * The newest max events of lock name's history whose time is at least
 * since_ms (0: any), oldest first, into *ev (malloc'd; free it) and *n.
 * With several masters their records are merged (one event, recorded by
 * each, counts once with servers set).  cur, when not NULL, is set to
 * where the history ends, for rlock_log_follow.  Returns RLOCK_OK or an
 * error (RLOCK_ENOPERM: the ACL refuses reading the stream).
 */
int rlock_log(struct rlock *rl, const char *name, size_t max,
	      long long since_ms, struct rlock_event **ev, size_t *n,
	      struct rlock_log_cursor *cur);

/* The events recorded after cur (up to 1000), advancing it.  Returns as
 * rlock_log. */
int rlock_log_follow(struct rlock *rl, const char *name,
		     struct rlock_log_cursor *cur, struct rlock_event **ev,
		     size_t *n);

/*
 * The last completed run of lock name (the newest released, abandoned or
 * lost event; the command and note of its grant filled in when known)
 * into *last, and the last successful one (rlock_event_ok) into *ok.  Each
 * flag is 1 when found.  Read from the record of the last runs, which
 * trimming the history never reaches, and the newest history entries;
 * without that record (a history older rlock wrote) at most
 * RLOCK_LAST_SCAN entries back.  The record's success counts only when the
 * history holds it as a success, or when it lies before the history's
 * first entry (trimmed) and not after the server's clock (TIME, asked only
 * then).  What is ignored is said by rlock_last_junk.  Returns RLOCK_OK or
 * an error.
 */
#define RLOCK_LAST_SCAN 20000
int rlock_last(struct rlock *rl, const char *name, struct rlock_event *last,
	       int *has_last, struct rlock_event *ok, int *has_ok);

/* After rlock_last: what it ignored as another client's data (a record
 * of the last success that names no success of the history, or one later
 * than the server's clock), as one line, raw (escape it to show it); NULL
 * when nothing was. */
const char *rlock_last_junk(const struct rlock *rl);

/* Whether an event ended a run successfully: released with exit status 0,
 * or by a plain release (no status, no signal, no reason); never a field
 * that did not decode, a signal, a loss, an abandoned lease. */
int rlock_event_ok(const struct rlock_event *e);

/* After rlock_status: the lock's last completed run.  Returns 1 and points
 * *e at it (valid until the next rlock_status or rlock_free), or 0. */
int rlock_status_last(const struct rlock *rl, const struct rlock_event **e);

/* A leader (rlock lead) gives up the lock it holds under lease by its own
 * choice (reason for people: a failing health check): recorded in the
 * history as "stepped-down" with the reason and how the work under it
 * ended (NULL: not known), then released with no entry of its own, so
 * that the next in line is granted it.  Returns what rlock_release
 * returns. */
int rlock_step_down(struct rlock *rl, const char *name,
		    const struct rlock_lease *lease, const char *reason,
		    const struct rlock_outcome *how);

/* Record that the lease of name was lost (reason for people; code the
 * keepalive's result: RLOCK_NOTOURS says the renewal was refused), and how
 * the work under it ended (NULL: not known).  Best effort, within the I/O
 * timeout: returns RLOCK_OK or the error, which callers may ignore. */
int rlock_record_lost(struct rlock *rl, const char *name,
		      const struct rlock_lease *lease, int code,
		      const char *reason, const struct rlock_outcome *how);

/* NULL while the history is kept; else why a server refused to record it
 * (said once an acquire saw it), with the ACL rule that would allow it. */
const char *rlock_history_refused(const struct rlock *rl);

/* Whether that is because the history's key holds another client's data
 * (a type rlock does not keep there), which is always worth saying. */
int rlock_history_junk(const struct rlock *rl);

/* The name of signal sig without "SIG" ("TERM"), or its number, in buf. */
const char *rlock_signame(int sig, char *buf, size_t len);

/* Check a note: at most RLOCK_NOTE_MAX bytes, no control characters.
 * Returns RLOCK_OK or RLOCK_EUSAGE with a reason in why. */
int rlock_check_note(const char *note, const char **why);

/*
 * Call cb for the name of every lock held under the prefix (SCAN, never
 * KEYS; junk NULL), then for each key under the prefix that is named like
 * a lock but is not one (the key, raw, and in junk why: not a lock
 * name, or another type), each once, stopping early when cb returns
 * non-zero.  At most 10000 SCAN pages per pass and server, a million
 * names.  Returns RLOCK_OK or an error.
 */
int rlock_list(struct rlock *rl,
	       int (*cb)(const char *name, const char *junk, void *arg),
	       void *arg);

/*
 * Keep lease alive until stop_fd becomes readable: extend it every
 * ttl/3 and retry failures until the lease may have run out, judged on
 * CLOCK_BOOTTIME with a safety margin (rlock_safety_margin_ms) so the caller
 * learns of the loss before the server can give the lock to another.
 * It connects at once (rlock_watch_open, unless the caller did) and
 * watches its idle connections between renewals: when the server closes
 * one (a restart, a crash, a Sentinel failover), it connects again and
 * renews at once, so a lost lock is noticed then.  at_once: renew now
 * rather than when due (the caller saw such a close).  Meant to run on a
 * thread of its own, with a handle no other thread uses meanwhile.
 * Returns RLOCK_OK when stopped, RLOCK_NOTOURS when the server says the
 * token no longer holds the lock, RLOCK_LOST when confirmations ran out.
 */
int rlock_keepalive(struct rlock *rl, const char *name,
		    struct rlock_lease *lease, int stop_fd, int at_once);

/*
 * The clock drift allowed between us and a server over a lease of ttl_ms
 * (1% plus 2ms, as Redlock assumes): a grant is of use only while more
 * than this is left, and a command that ignores SIGTERM after a loss is
 * killed this long before the server may give the lock to another.
 */
int64_t rlock_drift_ms(int64_t ttl_ms);

/*
 * The margin taken off a lease of ttl_ms before the renewer judges it
 * lost: the drift allowance, plus time (about 9% of the TTL) to stop the
 * command before the server can free the key.
 */
int64_t rlock_safety_margin_ms(int64_t ttl_ms);

/* Write ms for people ("250ms", "2s", "1.5s", "3m", "2h") into buf and
 * return buf. */
const char *rlock_fmt_ms(int64_t ms, char *buf, size_t len);

/* Write wall-clock ms as "YYYY-MM-DD HH:MM:SS UTC" into buf, return buf. */
const char *rlock_fmt_utc(long long ms, char *buf, size_t len);

/*
 * Strings without printf, for the paths of a lock cycle: libc's printf
 * machinery spans pages that a plain run otherwise never touches, about
 * 110 KiB of its peak RSS (bench/RESULTS-perf.md).
 *
 * rlock_strlcpy and rlock_strlcat are OpenBSD's strlcpy and strlcat: dst,
 * a buffer of len bytes, gets src (after what it holds), cut to fit and
 * terminated; the result is the length of the string tried (what dst held
 * plus src), so a result >= len tells that this call cut.  rlock_join
 * writes the strings of part, up to a NULL, one after the other into dst
 * when they fit in len bytes with the terminator, and returns their
 * length; when they do not, it leaves dst empty and returns -1.
 * rlock_utoa and rlock_lltoa write v in decimal at dst, with no
 * terminator, and return the length: at most 20 (with the sign, 20 too).
 */
size_t rlock_strlcpy(char *dst, const char *src, size_t len);
size_t rlock_strlcat(char *dst, const char *src, size_t len);
int rlock_join(char *dst, size_t len, const char *const *part);
size_t rlock_utoa(char *dst, unsigned long long v);
size_t rlock_lltoa(char *dst, long long v);

/*
 * The one integer parser for data rlock did not write (replies, keys,
 * messages, the environment): the n bytes at s are an optional '-' and
 * one or more digits, nothing else (no space, no '+', no exponent), and
 * the value lies in min..max.  Returns 0 with *v set, or -1.
 */
int rlock_parse_ll(const char *s, size_t n, long long min, long long max,
		   long long *v);

/*
 * The UTF-8 character at s (n bytes there) as RFC 3629 defines it: its
 * code point into *cp.  A stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF and a sequence cut short are no
 * character.  Returns the character's length in bytes (1 to 4), or 0.
 */
size_t rlock_utf8_char(const char *s, size_t n, uint32_t *cp);

/*
 * Whether the code point c may reach a terminal as it is: not a C0 or C1
 * control nor DEL, not a character that moves, hides or reorders text
 * (U+00AD, U+061C, U+180E, U+200B..U+200F, U+2028..U+202E,
 * U+2060..U+206F, U+FEFF, U+FFF9..U+FFFB, U+E0000..U+E007F), not a
 * noncharacter.  Returns 1 or 0.
 */
int rlock_utf8_shown(uint32_t c);

/*
 * Write the n bytes at src into dst (len bytes, terminated) as a terminal
 * may show them, in the manner of OpenBSD's vis(3): printable ASCII and
 * the UTF-8 characters rlock_utf8_shown accepts as they are, the
 * backslash as \\, and every other byte (C0, DEL, the bytes of a C1 or
 * other hidden character, each byte that is no valid UTF-8) as \xNN in
 * lower-case hex.  What does not fit is cut at a character's boundary,
 * never inside an escape or a character.  For text that came from a
 * server or another client.  Returns dst.
 */
char *rlock_vis(char *dst, size_t len, const char *src, size_t n);

/* CLOCK_BOOTTIME and CLOCK_MONOTONIC in milliseconds. */
int64_t rlock_boot_ms(void);
int64_t rlock_mono_ms(void);

/*
 * Parse a duration: seconds as a decimal ("1.5") or numbers with units
 * d, h, m, s or ms ("500ms", "5m", "1d", "1h30m"), each unit at most once,
 * largest first, only the last with a fraction, with no space and nothing
 * after it.
 * Zero is accepted: callers decide whether it makes sense.  Returns 0 and
 * sets *ms (fractions of a millisecond are dropped), or -1 for empty,
 * malformed, negative or overflowing input (more than 100 years) and for a
 * non-zero value that is below one millisecond.
 */
int rlock_parse_duration(const char *s, int64_t *ms);

/* Fill buf (at least RLOCK_TOKEN_LEN + 1 bytes) with 128 random bits in
 * hex from getrandom(2).  Returns 0, or -1 with errno set. */
int rlock_make_token(char *buf);

#endif /* RLOCK_H */
