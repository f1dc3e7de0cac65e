/*
 * lock_int.h - the layers above the transport, private to lib/: the
 * handle and its nodes (topology), the scripts and their argument
 * builders (protocol), and the fan-out of one request to every server
 * with its quorum rules.  lock.c and bench.c build on these.
 */
#ifndef RLOCK_LOCK_INT_H
#define RLOCK_LOCK_INT_H

#include "rlock_int.h"

#define RLOCK_MAX_SERVERS 16
#define RLOCK_REQ_MAXARGS 16

/* ---- key names (one place for the layout of DESIGN section 3) -------- */

#define KEY_META ":meta"
#define KEY_FENCE ":fence"
#define KEY_CHANNEL ":released"

/* The names of one lock, for the argument builders. */
struct lock_names {
	const char *key, *meta, *fence, *chan;
};

/* Write "prefix{name}suffix" into buf.  Returns its length, or -1 when it
 * does not fit. */
int lock_key(char *buf, size_t len, const char *prefix, const char *name,
	     const char *suffix);

/* ---- scripts and requests -------------------------------------------- */

enum rlock_script_id {
	RLOCK_SCRIPT_ACQUIRE,
	RLOCK_SCRIPT_EXTEND,
	RLOCK_SCRIPT_RELEASE,
	RLOCK_SCRIPT_FORCE,
	RLOCK_SCRIPT_FENCE,
	RLOCK_SCRIPT_STATUS,
	RLOCK_SCRIPT_COUNT
};

#define REQ_COMMAND (-1)		/* a request that is no script */

struct rlock_script {
	const char *name;
	const char *body;
	const char *sha;		/* SHA-1 of body, for EVALSHA */
};

extern const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT];

/*
 * One request, ready to send to any server: a script (its KEYS then its
 * ARGV in argv) or a plain command.  The builders below are the only
 * places that know each script's argument order.
 */
struct request {
	int script;			/* an rlock_script_id or REQ_COMMAND */
	int nkeys;			/* script: the first nkeys of argv */
	int argc;
	const char *argv[RLOCK_REQ_MAXARGS];
	char num[3][24];		/* storage for numbers in argv */
	char label[RLOCK_LABEL_MAX + 1];
};

/* Who asks for a lock, for the holder's metadata. */
struct acquirer {
	const char *host, *user, *label;
	long long pid;
	int64_t min_hold_ms;
};

/* Acquire.  details: a busy answer carries the holder's metadata. */
void req_acquire(struct request *q, const struct lock_names *n,
		 const char *token, int64_t ttl_ms, const struct acquirer *who,
		 int details);
void req_extend(struct request *q, const struct lock_names *n,
		const char *token, int64_t ttl_ms);
void req_release(struct request *q, const struct lock_names *n,
		 const char *token);
void req_force(struct request *q, const struct lock_names *n);
void req_status(struct request *q, const struct lock_names *n);
/* Raise the fence counter to fence (several masters). */
void req_fence(struct request *q, const struct lock_names *n,
	       const char *token, long long fence);
/* A plain command of argc words. */
void req_command(struct request *q, int argc, const char *const *argv);

/* Queue q on c as EVALSHA (EVAL with use_eval, after NOSCRIPT) or as the
 * command it is, without waiting.  Returns RLOCK_OK or RLOCK_ESYS. */
int req_send(struct rlock_conn *c, const struct request *q, int use_eval);

/* What one server answered to one request. */
struct rlock_result {
	int rc;			/* RLOCK_OK with r set, or an error */
	redisReply *r;
	char err[512];
};

/* Turn an error reply into a code and a message users can act on. */
void classify_error(const redisReply *r, const char *addr, const char *key,
		    struct rlock_result *res);

/* ---- nodes: where a server's connections come from ------------------- */

/*
 * One server of a lock.  Today a node is a direct connection to its URL;
 * Sentinel discovery and Cluster redirections plug in here: the fan-out
 * asks the node for a connection, tells it what came back, and the node
 * says what to do next.
 */
struct rlock_node {
	struct rlock_url url;
	struct rlock_conn *cmd;		/* requests */
	struct rlock_conn *sub;		/* the release channel, while waiting */
};

enum node_next {
	NODE_OK,		/* the reply is the answer */
	NODE_RETRY,		/* send again on this node (dropped, LOADING) */
	NODE_REDIRECT,		/* send to the node the reply names (Cluster) */
	NODE_REDISCOVER,	/* ask again who the master is (Sentinel) */
	NODE_FAIL,		/* the reply is the answer, and an error */
};

/* The node's command connection, opened before deadline when it is not.
 * Returns RLOCK_OK or RLOCK_EUNAVAIL (the reason in conn_errstr). */
int node_open(struct rlock_node *n, int64_t deadline);

/* What to do after n's connection dropped (r NULL) or answered r. */
enum node_next node_heard(struct rlock_node *n, const redisReply *r);

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
	char err[600];
};

/* Fill rl->host and rl->user once, before they are first needed. */
void identify(struct rlock *rl);

/* ---- fan-out: one request to every server, and the quorum --------------- */

/* One server's part in a fan-out. */
struct fan_slot {
	const struct request *req;	/* NULL: not in this fan-out */
	int state;
	int use_eval;			/* NOSCRIPT came back: send EVAL */
	int tries;
	int dropped;			/* sent again after a drop */
	int answered;			/* the last send got a reply */
	int64_t retry_at;
	struct rlock_result res;
};

struct fan {
	struct fan_slot slot[RLOCK_MAX_SERVERS];
	size_t n;
	size_t resent;			/* requests sent again after a drop */
};

/* A fan-out of nothing yet over rl's servers; fan_all or slot[i].req say
 * who gets what. */
void fan_init(struct fan *f, const struct rlock *rl);

/* Send q to every server. */
void fan_all(struct fan *f, const struct request *q);

/*
 * Send each slot's request at once and wait for every reply within the I/O
 * timeout (cut to rl->hard_deadline).  NOSCRIPT is answered with EVAL,
 * LOADING retried every 100ms, and a dropped connection reopened and the
 * request sent again (every script tolerates a repeat: acquire finds its
 * own token).  slot[i].res gets the reply or an error.
 */
void fan_run(struct rlock *rl, struct fan *f);

/* Free the replies. */
void fan_done(struct fan *f);

/* Count a quorum among integer replies (positive is yes): RLOCK_OK,
 * RLOCK_NOTOURS when too many said no, or the first error.  *yes may be
 * NULL. */
int fan_tally(struct rlock *rl, struct fan *f, const char *what, size_t *yes);

/* Copy the first error into rl->err and return its code; with several
 * servers, say how many of them failed. */
int fan_first_error(struct rlock *rl, struct fan *f, size_t failed);

/* Mark slot i's reply as not what what should answer. */
void fan_unexpected(struct fan *f, size_t i, const char *what);

/* Undo a grant that did not make a quorum: release token everywhere. */
void fan_undo(struct rlock *rl, const struct lock_names *n, const char *token);

/* Whether a grant asked at some moment and confirmed elapsed_ms later is
 * still of use: the TTL less the clock drift allowance must remain. */
int lease_valid(int64_t ttl_ms, int64_t elapsed_ms);

#endif /* RLOCK_LOCK_INT_H */
