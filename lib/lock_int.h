/*
 * lock_int.h - the layers above the transport, private to lib/: the
 * handle and its nodes (topology), the scripts and their argument
 * builders (protocol), and the fan-out of one request to every server
 * with its quorum rules.  lock.c and bench.c build on these.
 */
#ifndef RLOCK_LOCK_INT_H
#define RLOCK_LOCK_INT_H

#include "rlock_int.h"
#include "protocol.h"

/* A request's arguments: a set of RLOCK_WITH_MAX locks (--with) declares
 * 13 keys of each on a cluster, and adds its own arguments. */
#define RLOCK_REQ_MAXARGS (13 * RLOCK_WITH_MAX + 16)

/* ---- key names (one place for docs/design.md#the-keys) ---------------- */

#define KEY_META ":owner"
#define KEY_FENCE ":fence"
#define KEY_CHANNEL ":released"
#define KEY_HOLDERS ":holders"
#define KEY_HMETA ":holders:meta"
#define KEY_LINE ":line"
#define KEY_LEASE ":line:lease"
#define KEY_WHO ":line:who"
#define KEY_WAKE ":wake:"		/* + a waiter's id: its wake-up channel */
#define KEY_LOG ":log"
#define KEY_ONCE ":once"		/* the period done, for --once-per */
#define KEY_GRANT ":grant"		/* an exclusive grant's record */
#define KEY_HOLD ":hold"		/* --min-hold's end, while it lasts */
#define KEY_WITH ":with"		/* the set held with it (--with) */
#define KEY_LAST ":log:last"		/* the last runs (the scripts name
					 * it from the log's key) */

/* How long a wait without end (no -w) retries a failover seen under way
 * (a replica named master, READONLY, a cluster slot down) before any
 * server answered it: far above what a failover takes, so that one never
 * ends such a wait, but not for ever, so that sentinels that always name
 * a replica are reported (69).  A bounded wait retries within its own
 * time, and no wait (-n) within the I/O timeout. */
#define FAILOVER_GRACE_MS 60000

/* A grant through Sentinel whose try took this long or longer is checked
 * with the sentinels before it is kept: a master frozen past a failover
 * grants, as it thaws, what was asked of it before (a failover takes at
 * least down-after-milliseconds, far above this). */
#define CONFIRM_MS 250

#define LINE_ID_LEN 16			/* hex digits of a waiter's id */

/*
 * How long a waiter told "held" waits before it asks again (ms), unless
 * woken first: in line, every LINE_BEAT_MS (further back, less often:
 * see LINE_NEAR) to keep its place, and the next in line also when the
 * holder's lease (pttl) runs out, for a holder that died never releases;
 * not in line, when the lease runs out, or every second without a channel
 * to hear releases on.  rnd (0..999)
 * spreads waiters so that they do not all arrive at once.
 */
int64_t line_wait_ms(long long pttl, long long place, int in_line,
		     int subscribed, unsigned rnd);

/* The names of one lock, for the argument builders, and the cluster slot
 * they share (key_slot of key, computed once).  wake is the prefix of the
 * waiters' channels. */
struct lock_names {
	const char *key, *meta, *fence, *holders, *hmeta, *line, *lease,
		   *who, *chan, *wake, *log, *once, *last, *grant, *hold;
	int slot;
	int multislot;			/* its keys span slots (an empty
					 * hash tag): declare them all */
};

/* The names of one lock with room for them (13 KB: one per call, not
 * one per bench name). */
struct lock_keys {
	char key[RLOCK_KEY_MAX];
	char meta[RLOCK_KEY_MAX + 16], fence[RLOCK_KEY_MAX + 16];
	char holders[RLOCK_KEY_MAX + 16], hmeta[RLOCK_KEY_MAX + 16];
	char line[RLOCK_KEY_MAX + 16], lease[RLOCK_KEY_MAX + 16];
	char who[RLOCK_KEY_MAX + 16], chan[RLOCK_KEY_MAX + 16];
	char wake[RLOCK_KEY_MAX + 16], log[RLOCK_KEY_MAX + 16];
	char once[RLOCK_KEY_MAX + 16], last[RLOCK_KEY_MAX + 16];
	char grant[RLOCK_KEY_MAX + 16], hold[RLOCK_KEY_MAX + 16];
	struct lock_names v;		/* the above, for the builders */
};

/* Fill k with the names of lock name under prefix (a checked name and a
 * bounded prefix always fit). */
void lock_keys_init(struct lock_keys *k, const char *prefix,
		    const char *name);

/* The number of keys of a lock, in the order the scripts take them (each
 * the first few it needs): key, meta, holders, hmeta, line, lease, who,
 * fence, log. */
#define LOCK_NKEYS 9

/* Write "prefix{name}suffix" into buf.  Returns its length, or -1 (and
 * an empty buf) when it does not fit. */
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

/* The fields of a history entry, in the order an entry has them; each
 * entry has only those it knows a value for.  A release has since (the
 * grant's time), not held: the time held is the entry's time less since. */
enum {
	EV_EVENT, EV_HOST, EV_USER, EV_PID, EV_KIND, EV_FENCE, EV_TOKEN,
	EV_WAITED, EV_SINCE, EV_HELD, EV_EXIT, EV_SIGNAL, EV_REASON,
	EV_COMMAND, EV_NOTE, EV_SLOT, EV_MEMBERS, EV_NFIELDS
};
extern const char *const ev_field[EV_NFIELDS];

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

void req_acquire(struct request *q, const struct lock_names *n,
		 const char *token, int64_t ttl_ms, const struct acquirer *who,
		 const struct ask *a, const struct history *h);
/* Leave the line: waiter's place of kind, and the lock when a release
 * handed it to token as it left (the history's entry says so;
 * lib/scripts/leave.c). */
void req_leave(struct request *q, const struct lock_names *n,
	       const char *kind, const char *waiter, const char *token,
	       const struct history *h);
/* Extend a lease of kind 'x' (exclusive) or 'h' (shared, semaphore;
 * lib/scripts/extend.c). */
void req_extend(struct request *q, const struct lock_names *n,
		const char *token, int64_t ttl_ms, int kind);
/* Release, recording how the work ended (how NULL: not known); once_ms
 * (--once-per, 0 none): a run that ended well marks its period done;
 * announce: publish it on the release channel, where the waiters of
 * several masters listen. */
void req_release(struct request *q, const struct lock_names *n,
		 const char *token, const struct history *h,
		 const struct rlock_outcome *how, int64_t once_ms,
		 int announce);
/* The script of several locks (lib/scripts/with.c): acquire (waiter ''
 * takes no place; join takes one in every line), extend, release and
 * leave the lines, every lock of w at once. */
void req_with_acquire(struct request *q, const struct with_set *w,
		      const char *token, int64_t ttl_ms,
		      const struct acquirer *who, const char *waiter, int join,
		      int details, const struct history *h, int64_t baton_ms);
void req_with_extend(struct request *q, const struct with_set *w,
		     const char *token, int64_t ttl_ms);
void req_with_release(struct request *q, const struct with_set *w,
		      const char *token, const struct history *h,
		      const struct rlock_outcome *how);
void req_with_leave(struct request *q, const struct with_set *w,
		    const char *token, const char *waiter,
		    const struct history *h);
/* with.lua's acquire answer for n names into out, and the holder it
 * names (details) into h; the set's record P{N}:with, len bytes at s,
 * into out.  Each returns 0, or -1 for anything of another shape. */
int decode_with_acquire(const redisReply *r, size_t n,
			struct with_reply *out, struct rlock_holder *h);
int decode_with_record(const char *s, size_t len, struct rlock_with *out);
/* Record one history entry: v holds the EV_NFIELDS values (NULL: ""),
 * run, when not NULL, the run it ends for the record of the last runs
 * (log.lua: "EVENT\nKIND\n..." without its "1\nID\n"). */
void req_log(struct request *q, const struct lock_names *n,
	     const struct history *h, const char *run, const char *const *v);
void req_status(struct request *q, const struct lock_names *n);
/* Raise the fence counter to fence (several masters). */
void req_fence(struct request *q, const struct lock_names *n,
	       const char *token, long long fence);
/* Remove whoever holds it; by is who did, for the history
 * (lib/scripts/force.c). */
void req_force(struct request *q, const struct lock_names *n,
	       const char *by, const struct history *h);

/*
 * For the argument builders (lib/request.c, lib/scripts/NAME.c): start q as
 * script with its first nkeys keys of n, in the order the scripts take
 * them; v written in q's number storage slot; the history's length and ttl
 * in slots slot and slot + 1, as the scripts take them; a key (the log,
 * the period's record) appended as the next.
 */
void req_begin(struct request *q, int script, int nkeys,
	       const struct lock_names *n);
const char *req_num(struct request *q, int slot, long long v);
void req_history(struct request *q, int slot, const struct history *h);
void req_add_key(struct request *q, const char *key);
void req_begin_all(struct request *q, int script, const struct lock_names *n);
void req_begin_short(struct request *q, int script,
		     const struct lock_names *n);
/* The request builders' writers of packed arguments (lib/request.c):
 * text, the token's first 8 characters, a number, each appended at *at
 * within size; and whether h is the history the scripts keep by default. */
void req_put(char *dst, size_t size, size_t *at, const char *s);
void req_put_prefix(char *dst, size_t size, size_t *at, const char *tok);
void req_put_num(char *dst, size_t size, size_t *at, long long v);
/* The holder's fields, packed into q->info as the scripts take them
 * (acquire.lua, with.lua): "KIND\nWAITED\nTOKEN8\nPID\nHOST\nUSER\n
 * NOTE\nCOMMAND", WAITED left out when negative, COMMAND q->label. */
void req_put_holder(struct request *q, const char *kind, long long waited,
		    const char *token, const struct acquirer *who);
int req_default_history(const struct history *h);

/* A plain command of argc words, for slot (-1: keyless). */
void req_command(struct request *q, int argc, const char *const *argv,
		 int slot);

/* Queue q on c as EVALSHA (EVAL with use_eval, after NOSCRIPT) or as the
 * command it is, without waiting; with whole, in the script's whole
 * layout when q has one.  Returns RLOCK_OK or RLOCK_ESYS. */
int req_send(struct rlock_conn *c, const struct request *q, int use_eval,
	     int whole);

/* What one server answered to one request. */
struct rlock_result {
	int rc;			/* RLOCK_OK with r set, or an error */
	redisReply *r;
	char err[768];
	int wrongtype;		/* the error was WRONGTYPE: explain_wrongtype
				 * names the key */
};

/*
 * After a WRONGTYPE answer to q on connection c: ask the TYPE of each of
 * q's keys (within deadline) and, for the first that holds another type
 * than rlock keeps there, say so in res->err, with the fix ('rlock release
 * --force NAME' removes it).  res is left as it was when none is found.
 */
void explain_wrongtype(struct rlock_conn *c, const struct request *q,
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
int scripts_unavailable(const redisReply *r, char *why, size_t len);

/*
 * Whether r is an error reply that says the server's ACL refused
 * something: NOPERM, or a call inside a script refused in Valkey's or
 * Redis 7's words.  Returns 1 or 0.
 */
int acl_refusal(const redisReply *r);

/*
 * Where the tail a server puts after a script's error starts (" script:
 * SHA, on @user_script:N."), in the n bytes at s; NULL when there is
 * none.  The error before it is the server's whole message.
 */
const char *script_tail(const char *s, size_t n);

/* Where line (1 the first) of script s's body comes from: the file in
 * lib/scripts/ and its line there.  Returns 0, or -1 for a line the body
 * does not have. */
int script_source(const struct rlock_script *s, unsigned long line,
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
void script_error_text(const char *s, size_t n, char *buf, size_t len);

/* Turn an error reply of c's server into a code and a message users can
 * act on; key names what the request was about.  A server that cannot
 * run scripts is RLOCK_EUNAVAIL, named once here for every verb. */
void classify_error(const redisReply *r, const struct rlock_conn *c,
		    const char *key, struct rlock_result *res);

/* ---- nodes: where a server's connections come from ------------------- */

#define CLUSTER_SLOTS 16384
#define NODE_MAX_PEERS 250		/* cluster masters one node may know */

/* The cluster slot of a key: CRC16 of its hash tag ({...}), or of the
 * whole key when it has none or an empty one. */
int key_slot(const char *key, size_t len);

/* One server a node reaches: the URL's own, the master the sentinels
 * named, or a cluster master a redirection named. */
struct peer {
	struct rlock_url url;		/* the node's URL with this address */
	struct rlock_conn *cmd;
	int64_t down_until;		/* a connect failed: others first */
};

/* Credentials for the sentinels, which are not the master's. */
struct sentinel_auth {
	const char *user, *password;	/* NULL: none */
};

/*
 * One server of a lock, as the user named it.  Direct: the URL's server.
 * Sentinel: the master the sentinels name, asked again whenever its
 * connection drops or it answers READONLY.  Cluster: any redis:// node may
 * turn out to be one (the first MOVED says so); the node then keeps the
 * masters it learns as peers, a slot map, and sends each request to the
 * owner of its slot.  The fan-out asks for a connection (node_route,
 * node_open), tells the node what came back (node_heard) and does what it
 * says.
 */
/* What a sentinel URL's node needs besides its URL. */
struct sentinels {
	struct rlock_url url;		/* the sentinels, with their credentials */
	struct rlock_conn_opts opts;
	char pass[512];
	size_t last;			/* the sentinel that answered last */
	struct rlock_conn *watch;	/* subscribed to +switch-master there,
					 * while waiting (node_watch) */
};

struct rlock_node {
	struct rlock_url url;		/* as given */
	const struct rlock_conn_opts *copts;
	struct peer **peer;		/* npeer of them */
	size_t npeer, cappeer;
	size_t cur;			/* the peer of cmd */
	struct rlock_conn *cmd;		/* requests: peer[cur]'s connection */
	struct rlock_conn *sub;		/* the release channel, while waiting */
	struct rlock_url *suburl;	/* where sub goes */
	unsigned char *slots;		/* cluster: slot -> peer + 1; 0 unknown */
	int ask;			/* ASK: the peer of the next send, -1 */
	int asking;			/* the next send goes after ASKING */
	int declare_all;		/* a script met a key it had not
					 * declared in a moving slot: this is
					 * a cluster, declare them all */
	int failing_over;		/* a failover under way was seen: a
					 * replica named master, READONLY,
					 * CLUSTERDOWN...; set here, cleared
					 * by the caller */
	struct sentinels *sent;		/* Sentinel only */
	struct rlock_conn_opts mopts;	/* Sentinel: the master's, with HELLO */
	/* Several masters: who the server is (identify_servers), told on
	 * id_conn when it had opened id_opens times; a server not told so
	 * on the connection in use has no vote (probe_err says why). */
	char run_id[41];		/* INFO's, "" unknown */
	char kid[RLOCK_TOKEN_LEN + 1];	/* the identity key's, "" unknown */
	const struct rlock_conn *id_conn;
	unsigned long id_opens;
	char id_peer[600];		/* the address it reached then */
	int probe_rc;
	char probe_err[768];
	char err[600];
};

enum node_next {
	NODE_OK,		/* the reply is the answer */
	NODE_RETRY,		/* send again on this node (dropped, LOADING) */
	NODE_REDIRECT,		/* send to the node the reply names (Cluster) */
	NODE_REDISCOVER,	/* ask again who the master is (Sentinel) */
	NODE_FAIL,		/* the reply is the answer, and an error */
};

/* Make n's first connection for n->url (already parsed).  Returns RLOCK_OK
 * or RLOCK_ESYS. */
int node_init(struct rlock_node *n, const struct rlock_conn_opts *o,
	      const struct sentinel_auth *sa);
void node_free(struct rlock_node *n);

/* Whether n is (known to be) a cluster node. */
int node_is_cluster(const struct rlock_node *n);
/* Whether requests to n go in the scripts' whole layout, every key
 * declared: a cluster (a slot may move while a script runs). */
int node_declares_all(const struct rlock_node *n);

/* Point n->cmd at the connection for a request on slot (-1: keyless, the
 * connection used last). */
void node_route(struct rlock_node *n, int slot);

/* The node's command connection, opened (and for Sentinel, the master
 * found) when it is not, each step within its timeout and before hard
 * (monotonic ms, 0 none).  Returns RLOCK_OK or RLOCK_EUNAVAIL (the reason
 * in node_errstr). */
int node_open(struct rlock_node *n, int64_t hard);

/* After node_open failed: whether another peer may serve the request
 * (a cluster whose node is down), so that it is worth sending again. */
int node_fallback(const struct rlock_node *n);

/*
 * Sentinel: while a waiter waits, hear of a failover from the sentinels
 * at once rather than from a master that may be deposed and not yet told
 * (one frozen past a failover and thawed answers as a master until the
 * sentinels reconfigure it, seconds later).  node_watch subscribes to
 * +switch-master on the sentinel that answered last (nothing on other
 * nodes, or when it cannot: the waiter's own tries still find the new
 * master, later); node_watch_fd is its connection's fd, -1 none;
 * node_watch_check reads what came (revents from poll) and returns 1 when
 * a switch of our master was announced: the node's connections are then
 * closed, so that its next request asks the sentinels who the master is,
 * and it is marked failing over.
 * A message is a hint: only the sentinels' answer to that request counts.
 */
void node_watch(struct rlock_node *n, int64_t deadline);
int node_watch_fd(const struct rlock_node *n);
int node_watch_buffered(const struct rlock_node *n);	/* TLS: read it */
int node_watch_check(struct rlock_node *n, short revents);
/* Whether r is a +switch-master message for master: ["message",
 * "+switch-master", "NAME OLDIP OLDPORT NEWIP NEWPORT"]. */
int node_is_switch(const redisReply *r, const char *master);
void node_watch_close(struct rlock_node *n);

/* What to do after n's connection dropped (r NULL) or answered r. */
enum node_next node_heard(struct rlock_node *n, const redisReply *r);

/* The socket of n's command connection while it is up, else -1: between
 * requests a renewer polls it, and the kernel says at once when the server
 * closed or reset it. */
int node_idle_fd(const struct rlock_node *n);

/* n's idle command connection polled revents: read what came.  When the
 * server closed it (or sent what nobody asked for), close it, so that the
 * next request finds the master (Sentinel) or the slot's owner (Cluster)
 * anew, and return 1; 0 when it is still up (a TLS record with no reply). */
int node_idle_check(struct rlock_node *n, short revents);

/* Where n's requests go now, for messages: "host:port", or the master's
 * name before the sentinels named its address. */
const char *node_addr(const struct rlock_node *n);

/* The reason of the last failure of node_open (or of n->cmd). */
const char *node_errstr(const struct rlock_node *n);

/* The subscription connection for slot, aimed at the master that owns it
 * (the one the sentinels name), not yet subscribed.  NULL when out of
 * memory or the master cannot be found (node_errstr). */
struct rlock_conn *node_sub(struct rlock_node *n, int slot, int64_t hard);

/* Sentinel: 0 when a sentinel that answers names another master than the
 * one n's requests go to (n->failing_over set), else 1.  Others: 1. */
int node_confirm(struct rlock_node *n, int64_t hard);
/* Close n's connections: the next request asks the sentinels again. */
void node_drop(struct rlock_node *n);

/*
 * The masters of n: for a cluster every master serving slots (CLUSTER
 * SLOTS, which also fills the slot map), else n's one server.  Writes up
 * to max peer indexes to out and returns how many, or -1 with node_errstr.
 */
int node_masters(struct rlock_node *n, int64_t hard, size_t *out,
		 size_t max);

/* After node_masters: where a connection of its own for slot goes (bench
 * opens thousands), and with which options. */
const struct rlock_url *node_url(const struct rlock_node *n, int slot,
				 const struct rlock_conn_opts **o);

/* ---- leases (lib/lease.c) ------------------------------------------- */

/* Whether a grant asked at some moment and confirmed elapsed_ms later is
 * still of use: the TTL less the clock drift allowance must remain. */
int lease_valid(int64_t ttl_ms, int64_t elapsed_ms);
/* A lease of o's kind granted at t0 (CLOCK_BOOTTIME ms, when the request
 * that got it was sent). */
void lease_init(struct rlock_lease *l, const char *token, long long fence,
		const struct rlock_acquire_opts *o, const char *kind,
		long long pid, int64_t t0);
/* When the lease may have run out by our clock, and when its next
 * renewal is due (CLOCK_BOOTTIME ms). */
int64_t lease_end(const struct rlock_lease *l);
int64_t lease_renew_at(const struct rlock_lease *l);

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

/* The names of lock name (docs/design.md#the-keys), and a waiter's own wake-up
 * channel. */
struct names {
	struct lock_keys k;
	char mywake[RLOCK_KEY_MAX + 16 + LINE_ID_LEN];
	struct lock_names v;
};

/* Fill n with the names of lock name, or say why it is no lock name
 * (RLOCK_EUSAGE). */
int make_names(struct rlock *rl, const char *name, struct names *n);

/* ---- the history (lib/history.c) ---- */

/* A release's entry e joined to its grant's entry g: who held it, since
 * when, with which command. */
void history_join_grant(struct rlock_event *e, const struct rlock_event *g);
/* A release whose grant is older than what a script read: its grant
 * looked up in the history, one read. */
void history_join_older(struct rlock *rl, const struct names *nm,
			struct rlock_event *e);

/* ---- reading replies (lib/reply.c) ---- */

/* Whether r's text (an error or status) starts with p. */
int reply_starts_with(const redisReply *r, const char *p);
/* Whether r is {kind, chan, x} of exactly the channel chan: "subscribe"
 * with a count, or "message" with its payload. */
int reply_is_push(const redisReply *r, const char *kind, const char *chan);

/* Element i of array r as a number in min..max: an integer reply, or a
 * string that rlock_parse_ll reads in full.  Returns 0 with *v set, or
 * -1 for anything else (absent, another type, junk, out of range). */
int elem_num(const redisReply *r, size_t i, long long min, long long max,
	     long long *v);
/*
 * What a server says of where another is (node.c), each strict: a host
 * of 1..255 printable bytes ("" for the one asked), a port 1..65535, and
 * slots lo..hi within the cluster's (-1 where none are named).  From an
 * error "MOVED 3999 host:port" (or ASK) of len bytes; from one range of
 * CLUSTER SLOTS, [lo, hi, [host, port, id...], replicas...]; from SENTINEL
 * GET-MASTER-ADDR-BY-NAME, [host, port].  Each returns 0 with *to filled,
 * or -1.
 */
struct peer_addr {
	char host[256];
	int port;
	int lo, hi;
};
int decode_redirect(const char *s, size_t len, struct peer_addr *to);
int decode_slot_range(const redisReply *e, struct peer_addr *to);
int decode_master_addr(const redisReply *r, struct peer_addr *to);

/* The acquire script's replies (lock.c), each strict: a grant, {1,
 * fence[, recorded[, slot]]}: returns 0 with a fence in 1..2^53-1,
 * recorded 1, 0 or -1 (not asked) and, when slot is not NULL, a
 * semaphore's slot in 0..RLOCK_LIMIT_MAX-1 (-1 none), else -1.  A busy answer, {0, pttl, place,
 * waiting, holders, joined, kind} and perhaps the holder's details, into
 * h: returns 0 or -1.  The fence of a baton's wake-up message (a
 * subscriber's array) whose grant the history refused, else 0: a hint. */
int decode_grant(const redisReply *r, long long *fence, int *recorded,
		 int *slot);
/* A stream id "MS-SEQ" (each below 2^63).  Returns 0, or -1. */
int decode_id(const char *s, size_t n, long long *ms,
	      unsigned long long *seq);
/* A history entry, [id, [field, value, ...]], into ev: 0, 1 for one with
 * no event (passed over), -1 for anything else (not a stream's reply).
 * Fields rlock did not write are unknown, marked in ev->bad. */
int decode_entry(const redisReply *e, struct rlock_event *ev);
/* The last success of the record of the last runs, its history entry's
 * id "MS-SEQ", into ev: a release that ended well, whose details are in
 * that entry (ev->trimmed until it is found).  Returns 0, or -1. */
int decode_ok(const char *s, size_t n, struct rlock_event *ev);
/*
 * One server's answer to XREVRANGE LOG ID - COUNT 1, the newest entry of
 * the history at or before id, the ID the record of the last success
 * names: OKREC_ENTRY, the history holds id and it is a success as
 * rlock_event_ok judges it (into ev); OKREC_TRIMMED, the history holds
 * nothing at or before id (it starts after it, or is empty); OKREC_FAILED,
 * id's entry is no success (or no event of rlock's); OKREC_NONE, the
 * history holds no entry id (the answer is one before it).  Returns one
 * of them, or -1 for a reply of another shape.
 */
enum { OKREC_ENTRY, OKREC_TRIMMED, OKREC_FAILED, OKREC_NONE };
int decode_ok_check(const redisReply *r, const char *id,
		    struct rlock_event *ev);
/* TIME's answer, [seconds, microseconds], as ms since the epoch (within
 * what a fence allows).  Returns 0, or -1 for anything else. */
int decode_time(const redisReply *r, long long *ms);
/* One SCAN reply of lock keys, prefix{NAME} (plen: the prefix's
 * length), as a listing reads it: the cursor (1 to 20 digits) into cursor,
 * how many lock names and how many keys that are none.  Returns RLOCK_OK,
 * RLOCK_EPROTO for a reply of the wrong shape or RLOCK_ESYS.  Every name
 * it keeps is a lock name (it aborts otherwise: for the fuzz target). */
int decode_scan(const redisReply *r, size_t plen, char cursor[32],
		size_t *nnames, size_t *njunk);
/* The status script's answer (status.lua) into h and, when list is not
 * NULL, its holders into *list (malloc'd, *nlist of them).  Returns 0, or
 * -1 for a reply of the wrong shape; values other clients wrote are
 * unknown, noted in h->junk. */
int decode_status(const redisReply *r, struct rlock_holder *h,
		  struct rlock_holder **list, size_t *nlist);
/* A run of the record of the last runs (release.lua), "1\nID\n
 * EVENT\n...", into ev.  Returns 0, or -1. */
int decode_run(const char *s, size_t n, struct rlock_event *ev);
/* acquire.lua's busy answer into h (lib/scripts/acquire.c), and the
 * history's hint in a grant's wake-up. */
int parse_busy(const redisReply *r, struct rlock_holder *h, int *joined,
	       long long *arrival);
long long history_hint(const redisReply *r);
/* Element i of array r as elem_num reads it, 0 when it does not (for
 * what is only shown), or as a string into buf. */
long long elem_ll(const redisReply *r, size_t i);
void elem_str(const redisReply *r, size_t i, char *buf, size_t len);
/* The holder layout of the force and status scripts: {flag, pttl, host,
 * pid, user, command, since, fence, token8, now}.  Returns 0 or -1. */
int parse_holder(const redisReply *r, struct rlock_holder *h);
/* The same fields at off in r, the flag and pttl first in r. */
int parse_holder_at(const redisReply *r, size_t off, struct rlock_holder *h);
/* A kind as the scripts write it ("x", "s", '' or a limit 2 to
 * RLOCK_LIMIT_MAX).  Returns 0, or -1 for anything else (*limit 0). */
int parse_kind(const char *k, int *shared, int *limit);
/* A kind of a pool: "p", a pool's holders, or "pK", a waiter for K
 * members.  Returns K, 1 for "p", or 0 for anything else. */
int pool_kind(const char *k);
/* A pool's members as a grant or the members script gives them: {name,
 * properties, ...}, up to max, each checked (rlock_check_member,
 * rlock_check_prop), into out.  Returns how many, or -1 for anything
 * else, with what in why. */
int decode_members(const redisReply *r, struct rlock_member *out,
		   size_t max, const char **why);
/* Whether the n bytes at v are a member's properties: "KEY=VALUE" lines
 * (rlock_check_prop), "" none. */
int props_ok(const char *v, size_t n);
/* The members script (lib/scripts/members.lua). */
void req_members(struct request *q, const struct lock_names *n,
		 const char *what, const char *member, const char *props);
/* A waiter's "KIND:ID\nsince\npid\nhost\nuser\n[priority\n]command"
 * into w; what does not decode is unknown, noted in junk. */
void parse_waiter(const char *v, long long now, struct rlock_waiter *w,
		  char *junk, size_t jlen);
/* Note in junk (when empty) that field what held the n bytes at v, which
 * rlock did not write: "what 'value'", cut at 40 bytes, raw (escaped
 * where it is shown). */
void note_junk(char *junk, size_t len, const char *what, const char *v,
	       size_t n);
/* A number field of n bytes at v: empty is unknown (unk); digits within
 * min..max; anything else is noted in junk and unknown. */
long long num_field(const char *v, size_t n, long long min, long long max,
		    long long unk, const char *what, char *junk, size_t jlen);
/* A shared or semaphore holder's metadata into h. */
void parse_meta(const char *v, long long now, struct rlock_holder *h);

/* Several locks (lib/sets.c), which rlock_acquire, rlock_extend and
 * rlock_release hand rl's set to: name is its first. */
int with_acquire(struct rlock *rl, const char *name,
		 const struct rlock_acquire_opts *o, struct rlock_lease *lease,
		 struct rlock_holder *holder);
int with_extend(struct rlock *rl, const char *token, int64_t ttl_ms,
		struct rlock_lease *lease);
int with_release(struct rlock *rl, const char *token,
		 const struct rlock_lease *lease,
		 const struct rlock_outcome *how);

/* Fill rl->host and rl->user once, before they are first needed. */
void identify(struct rlock *rl);

/* ---- fan-out: one request to every server, and the quorum --------------- */

/* One server's part in a fan-out. */
struct fan_slot {
	const struct request *req;	/* NULL: not in this fan-out */
	int state;
	int use_eval;			/* NOSCRIPT came back: send EVAL */
	int whole;			/* the whole layout (wargv) */
	int tries;
	int dropped;			/* sent again after a drop */
	int answered;			/* the last send got a reply */
	int redirects;			/* MOVED, ASK, new master */
	int skip;			/* replies to drop first (ASKING's) */
	int preset;			/* res set by the caller: not sent */
	int64_t retry_at;
	struct rlock_result res;
};

struct fan {
	struct fan_slot slot[RLOCK_MAX_SERVERS];
	size_t n;
	size_t resent;			/* requests sent again after a drop */
	int64_t extra_ms;		/* beyond the I/O timeout (WAIT) */
	int probe;			/* identify_servers' own: answers of
					 * servers not yet identified count */
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

/* Send q to every server that was identified (skip_unanswered) and wait
 * for their replies: fan_init, fan_all, skip_unanswered and fan_run. */
void fan_ask(struct rlock *rl, struct fan *f, const struct request *q);

/* Free the replies. */
void fan_done(struct fan *f);

/* Count a quorum among integer replies, each 0..most (positive is yes;
 * anything else is an unexpected reply): RLOCK_OK, RLOCK_NOTOURS when too
 * many said no, or the first error.  *yes may be NULL. */
int fan_tally(struct rlock *rl, struct fan *f, const char *what,
	      long long most, size_t *yes);

/* Copy the first error into rl->err and return its code; with several
 * servers, say how many of them failed. */
int fan_first_error(struct rlock *rl, struct fan *f, size_t failed);

/* Mark slot i's reply as not what what should answer. */
void fan_unexpected(struct fan *f, size_t i, const char *what);

/* Undo a grant that did not make a quorum: release token everywhere. */
void fan_undo(struct rlock *rl, const struct lock_names *n, const char *token);

/* Before each request of several masters: identify every server that was
 * not identified on the connection it uses now (a first request, or a
 * connection opened again since), and refuse two URLs of one server
 * (rlock_distinct).  Returns RLOCK_OK, RLOCK_EUSAGE or RLOCK_ESYS.  Then
 * skip_unanswered leaves out of the fan-out f, with why, the servers that
 * are not identified: they have no vote; and fan_run takes the vote from
 * an answer that came on a connection opened during the request. */
int identify_servers(struct rlock *rl);
void skip_unanswered(struct rlock *rl, struct fan *f);
int node_identified(const struct rlock_node *n);

/* Whether rl's servers, once their connections are open, are as many
 * as its URLs: RLOCK_OK, or RLOCK_EUSAGE with the two URLs that reach one
 * server named in err (doctor's check, and every request of several
 * masters). */
int rlock_distinct(struct rlock *rl, char *err, size_t len);

#endif /* RLOCK_LOCK_INT_H */
