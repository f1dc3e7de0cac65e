/*
 * lock_int.h - the handle and the script runner shared by lock.c and
 * scripts.c.
 */
#ifndef RLOCK_LOCK_INT_H
#define RLOCK_LOCK_INT_H

#include "rlock_int.h"

#define RLOCK_MAX_SERVERS 16
#define RLOCK_EVAL_MAXARGS 16
#define RLOCK_KEY_MAX (RLOCK_NAME_MAX + 300)

enum rlock_script_id {
	RLOCK_SCRIPT_ACQUIRE,
	RLOCK_SCRIPT_EXTEND,
	RLOCK_SCRIPT_RELEASE,
	RLOCK_SCRIPT_FORCE,
	RLOCK_SCRIPT_STATUS,
	RLOCK_SCRIPT_COUNT
};

struct rlock_script {
	const char *name;
	const char *body;
	const char *sha;		/* SHA-1 of body, for EVALSHA */
};

extern const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT];

/* One server of a lock: a command connection and, while waiting, a
 * second one subscribed to the release channel. */
struct rlock_server {
	struct rlock_url url;
	struct rlock_conn *cmd;
	struct rlock_conn *sub;
};

struct rlock {
	struct rlock_server *srv;	/* nsrv of them */
	size_t nsrv;
	size_t quorum;
	struct rlock_conn_opts copts;
	int64_t hard_deadline;		/* monotonic ms bounding all I/O; 0 none */
	size_t resent;			/* requests sent again by the last call */
	char password[512];
	char prefix[256];
	char host[256];
	char user[64];
	char keybuf[RLOCK_KEY_MAX];
	char err[600];
};

/* What one server answered to one script. */
struct rlock_result {
	int rc;			/* RLOCK_OK with r set, or an error */
	redisReply *r;
	char err[512];
};

/*
 * Queue script id on c as EVALSHA (or EVAL with use_eval, after a NOSCRIPT
 * reply) without waiting: for callers that drive many connections from one
 * poll loop.  Returns RLOCK_OK or RLOCK_ESYS.
 */
int rlock_script_send(struct rlock_conn *c, enum rlock_script_id id,
		      int use_eval, int nkeys, const char **keys, int nargs,
		      const char **args);

/* Fill rl->host and rl->user once, before they are first needed. */
void rlock_identify(struct rlock *rl);

void rlock_eval_all(struct rlock *rl, enum rlock_script_id id, int nkeys,
		    const char **keys, int nargs, const char **args,
		    struct rlock_result *res);
void rlock_results_free(struct rlock *rl, struct rlock_result *res);
void rlock_classify_error(const redisReply *r, const char *addr,
			  const char *key, struct rlock_result *res);

#endif /* RLOCK_LOCK_INT_H */
