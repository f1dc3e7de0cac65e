/*
 * request.h - the scripts, their requests and argument builders
 * (lib/request.c, lib/scripts/NAME.c), and what an error reply means
 * (lib/errors.c).
 */
#ifndef RLOCK_REQUEST_H
#define RLOCK_REQUEST_H

#include "rlock_int.h"
#include "protocol.h"
#include "keys.h"

/* A request's arguments: a set of RLOCK_WITH_MAX locks (--with) declares
 * 13 keys of each on a cluster, and adds its own arguments. */
#define RLOCK_REQ_MAXARGS (13 * RLOCK_WITH_MAX + 16)

/* ---- scripts and requests -------------------------------------------- */

enum rlock_script_id {
	RLOCK_SCRIPT_ACQUIRE,
	RLOCK_SCRIPT_EXTEND,
	RLOCK_SCRIPT_RELEASE,
	RLOCK_SCRIPT_FORCE,
	RLOCK_SCRIPT_FENCE,
	RLOCK_SCRIPT_STATUS,
	RLOCK_SCRIPT_LEAVE,
	RLOCK_SCRIPT_LOG,
	RLOCK_SCRIPT_MEMBERS,
	RLOCK_SCRIPT_WITH,
	RLOCK_SCRIPT_COUNT
};

#define REQ_COMMAND (-1)		/* a request that is no script */

/* Lines line.. of a script's body, up to the next span's, are lines
 * src.. of file (lib/scripts/). */
struct script_span {
	unsigned line, src;
	const char *file;
};

/* A server script, generated from lib/scripts/NAME.lua by the build
 * (lib/scripts/luagen.c). */
struct rlock_script {
	const char *name;
	const char *body;
	const char *sha;		/* SHA-1 of body, for EVALSHA */
	const struct script_span *span;	/* where its lines come from */
	size_t nspan;
};

extern const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT];

/*
 * One request, ready to send to any server: a script (its KEYS then its
 * ARGV in argv) or a plain command.  The builders below are the only
 * places that know each script's argument order.
 */
struct request {
	int script;			/* an rlock_script_id or REQ_COMMAND */
	int slot;			/* the cluster slot of its keys, -1 none */
	int nkeys;			/* script: the first nkeys of argv */
	int argc;
	const char *argv[RLOCK_REQ_MAXARGS];
	char num[11][24];		/* storage for numbers in argv */
	char member[24 + LINE_ID_LEN];	/* "KIND:ID" of a waiter */
	char label[RLOCK_LABEL_MAX + 1];
	/* acquire: the holder's fields, the options (lib/scripts/acquire.lua);
	 * release: its history entry, the options. */
	char info[1400];
	char opts[200];
	/* acquire and release: the script's whole layout, every key declared,
	 * when argv holds the short one (wargc 0: argv is the whole). */
	int wargc, wnkeys;
	const char *wargv[RLOCK_REQ_MAXARGS];
};

/* Several locks held together (--with, lib/sets.c): the lock key of
 * each name in the order given, each one's wake-up channel prefix, the
 * names one a line (the script records them), the cluster slot of the
 * first key and whether every key is in it, and the fences of the last
 * grant.  One per handle, on the heap (60 KB). */
struct with_set {
	size_t n;
	char key[RLOCK_WITH_MAX][RLOCK_KEY_MAX];
	/* Each lock's other keys, in the scripts' order after the lock key
	 * (with.lua), for a cluster, where a script declares every key. */
	char more[RLOCK_WITH_MAX][12][RLOCK_KEY_MAX + 16];
	char wake[RLOCK_WITH_MAX][RLOCK_KEY_MAX + 16];
	char names[RLOCK_WITH_MAX * (RLOCK_NAME_MAX + 1)];
	char first[RLOCK_NAME_MAX + 1];
	int slot;
	int sameslot;
	long long fence[RLOCK_WITH_MAX];
	size_t held;			/* the last busy answer's lock held
					 * (1.., 0 none) */
	char busy[RLOCK_NAME_MAX + 1];	/* its name, for rlock_with_busy */
};

/* with.lua's answer to an acquire: granted with a fence per name, or
 * busy: the shortest lease left of the locks held (-1 none), the nearest
 * place to a line's head (-1 none), whether it joined the lines, and the
 * first lock held exclusively (1.., 0 none). */
struct with_reply {
	int granted;
	long long fence[RLOCK_WITH_MAX];
	long long pttl, place, held;
	int joined;
};

/* Who asks for a lock, for the holder's metadata and the history. */
struct acquirer {
	const char *host, *user, *label, *note;
	long long pid;
	int64_t min_hold_ms;
	int64_t waited_ms;		/* since the acquire began */
};

/* What the history of a lock keeps: about max entries (0: nothing is
 * recorded), for ttl_ms after the last one. */
struct history {
	long max;
	int64_t ttl_ms;
};


/*
 * How a lock is asked for: its kind ("x" exclusive, "s" shared, or the
 * limit of a semaphore in decimal), and the waiter's id when it waits in
 * line ("new": a first try, which respects the line but takes no place;
 * "": none, several masters keep no line), with join set once the waiter
 * listens on its wake-up channel.  details: a busy answer carries the
 * holder's metadata.  The line's policies: priority (-100..100),
 * supersede (take the place of the --supersede waiter in line), and
 * once_ms (--once-per: not when this period of the server's clock is
 * done).  baton_ms: a waiter that takes the lock from the release that
 * frees it (0: it asks itself when woken), with a first lease that long.
 */
struct ask {
	const char *kind;
	const char *waiter;
	int join;
	int details;
	int priority;
	int supersede;
	int64_t once_ms;
	int64_t baton_ms;
	long long arrival;		/* a waiter's place's score when it
					 * joined before (0 not yet) */
	int micro;			/* fences ordered to the server's µs
					 * (a failover can put two masters
					 * side by side: Sentinel, Cluster) */
};

void rl_req_acquire(struct request *q, const struct lock_names *n,
		    const char *token, int64_t ttl_ms, const struct acquirer *who,
		    const struct ask *a, const struct history *h);
/* Leave the line: waiter's place of kind, and the lock when a release
 * handed it to token as it left (the history's entry says so;
 * lib/scripts/leave.c). */
void rl_req_leave(struct request *q, const struct lock_names *n,
		  const char *kind, const char *waiter, const char *token,
		  const struct history *h);
/* Extend a lease of kind 'x' (exclusive) or 'h' (shared, semaphore;
 * lib/scripts/extend.c). */
void rl_req_extend(struct request *q, const struct lock_names *n,
		   const char *token, int64_t ttl_ms, int kind);
/* Release, recording how the work ended (how NULL: not known); once_ms
 * (--once-per, 0 none): a run that ended well marks its period done;
 * announce: publish it on the release channel, where the waiters of
 * several masters listen. */
void rl_req_release(struct request *q, const struct lock_names *n,
		    const char *token, const struct history *h,
		    const struct rlock_outcome *how, int64_t once_ms,
		    int announce);
/* The script of several locks (lib/scripts/with.c): acquire (waiter ''
 * takes no place; join takes one in every line), extend, release and
 * leave the lines, every lock of w at once. */
void rl_req_with_acquire(struct request *q, const struct with_set *w,
			 const char *token, int64_t ttl_ms,
			 const struct acquirer *who, const char *waiter, int join,
			 int details, const struct history *h, int64_t baton_ms);
void rl_req_with_extend(struct request *q, const struct with_set *w,
			const char *token, int64_t ttl_ms);
void rl_req_with_release(struct request *q, const struct with_set *w,
			 const char *token, const struct history *h,
			 const struct rlock_outcome *how);
void rl_req_with_leave(struct request *q, const struct with_set *w,
		       const char *token, const char *waiter,
		       const struct history *h);
/* with.lua's acquire answer for n names into out, and the holder it
 * names (details) into h; the set's record P{N}:with, len bytes at s,
 * into out.  Each returns 0, or -1 for anything of another shape. */
int rl_decode_with_acquire(const redisReply *r, size_t n,
			   struct with_reply *out, struct rlock_holder *h);
int rl_decode_with_record(const char *s, size_t len, struct rlock_with *out);
/* Record one history entry: v holds the EV_NFIELDS values (NULL: ""),
 * run, when not NULL, the run it ends for the record of the last runs
 * (log.lua: "EVENT\nKIND\n..." without its "1\nID\n"). */
void rl_req_log(struct request *q, const struct lock_names *n,
		const struct history *h, const char *run, const char *const *v);
void rl_req_status(struct request *q, const struct lock_names *n);
/* Raise the fence counter to fence (several masters). */
void rl_req_fence(struct request *q, const struct lock_names *n,
		  const char *token, long long fence);
/* Remove whoever holds it; by is who did, for the history
 * (lib/scripts/force.c). */
void rl_req_force(struct request *q, const struct lock_names *n,
		  const char *by, const struct history *h);

/*
 * For the argument builders (lib/request.c, lib/scripts/NAME.c): start q as
 * script with its first nkeys keys of n, in the order the scripts take
 * them; v written in q's number storage slot; the history's length and ttl
 * in slots slot and slot + 1, as the scripts take them; a key (the log,
 * the period's record) appended as the next.
 */
void rl_req_begin(struct request *q, int script, int nkeys,
		  const struct lock_names *n);
const char *rl_req_num(struct request *q, int slot, long long v);
void rl_req_history(struct request *q, int slot, const struct history *h);
void rl_req_add_key(struct request *q, const char *key);
void rl_req_begin_all(struct request *q, int script, const struct lock_names *n);
void rl_req_begin_short(struct request *q, int script,
			const struct lock_names *n);
/* The request builders' writers of packed arguments (lib/request.c):
 * text, the token's first 8 characters, a number, each appended at *at
 * within size; and whether h is the history the scripts keep by default. */
void rl_req_put(char *dst, size_t size, size_t *at, const char *s);
void rl_req_put_prefix(char *dst, size_t size, size_t *at, const char *tok);
void rl_req_put_num(char *dst, size_t size, size_t *at, long long v);
/* The holder's fields, packed into q->info as the scripts take them
 * (acquire.lua, with.lua): "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\n
 * NOTE\nCOMMAND", WAITED left out when negative, COMMAND q->label. */
void rl_req_put_holder(struct request *q, const char *kind, long long waited,
		       const char *token, const struct acquirer *who);
int rl_req_default_history(const struct history *h);

/* A plain command of argc words, for slot (-1: keyless). */
void rl_req_command(struct request *q, int argc, const char *const *argv,
		    int slot);

/* Queue q on c as EVALSHA (EVAL with use_eval, after NOSCRIPT) or as the
 * command it is, without waiting; with whole, in the script's whole
 * layout when q has one.  Returns RLOCK_OK or RLOCK_ESYS. */
int rl_req_send(struct rlock_conn *c, const struct request *q, int use_eval,
		int whole);

/* What one server answered to one request. */
struct rlock_result {
	int rc;			/* RLOCK_OK with r set, or an error */
	redisReply *r;
	char err[768];
	int wrongtype;		/* the error was WRONGTYPE: rl_explain_wrongtype
				 * names the key */
	int full;		/* the server takes no more clients */
};

/*
 * After a WRONGTYPE answer to q on connection c: ask the TYPE of each of
 * q's keys (within deadline) and, for the first that holds another type
 * than rlock keeps there, say so in res->err, with the fix ('rlock release
 * --force NAME' removes it).  res is left as it was when none is found.
 */
void rl_explain_wrongtype(struct rlock_conn *c, const struct request *q,
			  const char *prefix, int64_t deadline,
			  struct rlock_result *res);

/*
 * Whether error reply r says that the server cannot run scripts at all:
 * EVAL or EVALSHA renamed away or disabled, or a Valkey without its Lua
 * engine, which answers EVALSHA with NOSCRIPT and then EVAL with "Could
 * not find scripting engine 'lua'".  If so, why gets what to tell users,
 * after the server's name: "cannot run Lua scripts (EVALSHA is an unknown
 * command): rlock needs EVAL and EVALSHA".  Returns 1 or 0.
 */
int rl_scripts_unavailable(const redisReply *r, char *why, size_t len);

/*
 * Whether r is an error reply that says the server's ACL refused
 * something: NOPERM, or a call inside a script refused in Valkey's or
 * Redis 7's words.  Returns 1 or 0.
 */
int rl_acl_refusal(const redisReply *r);

/*
 * Where the tail a server puts after a script's error starts (" script:
 * SHA, on @user_script:N."), in the n bytes at s; NULL when there is
 * none.  The error before it is the server's whole message.
 */
const char *rl_script_tail(const char *s, size_t n);

/* Where line (1 the first) of script s's body comes from: the file in
 * lib/scripts/ and its line there.  Returns 0, or -1 for a line the body
 * does not have. */
int rl_script_source(const struct rlock_script *s, unsigned long line,
		     const char **file, unsigned long *src);

/*
 * The text of an error reply, s of n bytes, as users see it: Redis 7's
 * tail " script: SHA, on @user_script:N." left out, and each
 * "user_script:N" (line N of the body) of a script of rlock's, which the
 * reply names by its digest, written as the line of lib/scripts/ it
 * comes from, "release.lua:40".  A plain ERR that only the tail placed
 * (one redis.call raised) is followed by it, " (extend.lua:27)"; other
 * codes (NOREPLICAS...) say what state the server is in, and get none.
 * Writes a string of at most len bytes to buf.
 */
void rl_script_error_text(const char *s, size_t n, char *buf, size_t len);

/* Turn an error reply of c's server into a code and a message users can
 * act on; key names what the request was about.  A server that cannot
 * run scripts is RLOCK_EUNAVAIL, named once here for every verb. */
void rl_classify_error(const redisReply *r, const struct rlock_conn *c,
		       const char *key, struct rlock_result *res);


/* The members script (lib/scripts/members.lua). */
void rl_req_members(struct request *q, const struct lock_names *n,
		    const char *what, const char *member, const char *props);

#endif
