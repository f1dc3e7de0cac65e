/*
 * node.h - where a server's connections come from: one URL's server,
 * its sentinels or its cluster (lib/node.c).
 */
#ifndef RLOCK_NODE_H
#define RLOCK_NODE_H

#include "rlock_int.h"

/* ---- nodes: where a server's connections come from ------------------- */

#define NODE_MAX_PEERS 250		/* cluster masters one node may know */


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
 * owner of its slot.  The fan-out asks for a connection (rl_node_route,
 * rl_node_open), tells the node what came back (rl_node_heard) and does what it
 * says.
 */
/* What a sentinel URL's node needs besides its URL. */
struct sentinels {
	struct rlock_url url;		/* the sentinels, with their credentials */
	struct rlock_conn_opts opts;
	char pass[512];
	size_t last;			/* the sentinel that answered last */
	struct rlock_conn *watch;	/* subscribed to +switch-master there,
					 * while waiting (rl_node_watch) */
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
	int full;			/* said it takes no more clients
					 * (maxclients): set by the fan-out,
					 * cleared by the caller */
	int slow;			/* left a request unanswered for the
					 * I/O timeout (a herd on a busy
					 * server): likewise */
	struct sentinels *sent;		/* Sentinel only */
	struct rlock_conn_opts mopts;	/* Sentinel: the master's, with HELLO */
	/* Several masters: who the server is (rl_identify_servers), told on
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
int rl_node_init(struct rlock_node *n, const struct rlock_conn_opts *o,
		 const struct sentinel_auth *sa);
void rl_node_free(struct rlock_node *n);

/* Whether n is (known to be) a cluster node. */
int rl_node_is_cluster(const struct rlock_node *n);
/* Whether requests to n go in the scripts' whole layout, every key
 * declared: a cluster (a slot may move while a script runs). */
int rl_node_declares_all(const struct rlock_node *n);

/* Point n->cmd at the connection for a request on slot (-1: keyless, the
 * connection used last). */
void rl_node_route(struct rlock_node *n, int slot);

/* The node's command connection, opened (and for Sentinel, the master
 * found) when it is not, each step within its timeout and before hard
 * (monotonic ms, 0 none).  Returns RLOCK_OK or RLOCK_EUNAVAIL (the reason
 * in rl_node_errstr). */
int rl_node_open(struct rlock_node *n, int64_t hard);

/* After rl_node_open failed: whether another peer may serve the request
 * (a cluster whose node is down), so that it is worth sending again. */
int rl_node_fallback(const struct rlock_node *n);

/*
 * Sentinel: while a waiter waits, hear of a failover from the sentinels
 * at once rather than from a master that may be deposed and not yet told
 * (one frozen past a failover and thawed answers as a master until the
 * sentinels reconfigure it, seconds later).  rl_node_watch subscribes to
 * +switch-master on the sentinel that answered last (nothing on other
 * nodes, or when it cannot: the waiter's own tries still find the new
 * master, later); rl_node_watch_fd is its connection's fd, -1 none;
 * rl_node_watch_check reads what came (revents from poll) and returns 1 when
 * a switch of our master was announced: the node's connections are then
 * closed, so that its next request asks the sentinels who the master is,
 * and it is marked failing over.
 * A message is a hint: only the sentinels' answer to that request counts.
 */
void rl_node_watch(struct rlock_node *n, int64_t deadline);
int rl_node_watch_fd(const struct rlock_node *n);
int rl_node_watch_buffered(const struct rlock_node *n);	/* TLS: read it */
int rl_node_watch_check(struct rlock_node *n, short revents);
/* Whether r is a +switch-master message for master: ["message",
 * "+switch-master", "NAME OLDIP OLDPORT NEWIP NEWPORT"]. */
int rl_node_is_switch(const redisReply *r, const char *master);
void rl_node_watch_close(struct rlock_node *n);

/* What to do after n's connection dropped (r NULL) or answered r. */
enum node_next rl_node_heard(struct rlock_node *n, const redisReply *r);

/* The socket of n's command connection while it is up, else -1: between
 * requests a renewer polls it, and the kernel says at once when the server
 * closed or reset it. */
int rl_node_idle_fd(const struct rlock_node *n);

/* n's idle command connection polled revents: read what came.  When the
 * server closed it (or sent what nobody asked for), close it, so that the
 * next request finds the master (Sentinel) or the slot's owner (Cluster)
 * anew, and return 1; 0 when it is still up (a TLS record with no reply). */
int rl_node_idle_check(struct rlock_node *n, short revents);

/* Where n's requests go now, for messages: "host:port", or the master's
 * name before the sentinels named its address. */
const char *rl_node_addr(const struct rlock_node *n);

/* The reason of the last failure of rl_node_open (or of n->cmd). */
const char *rl_node_errstr(const struct rlock_node *n);

/* The subscription connection for slot, aimed at the master that owns it
 * (the one the sentinels name), not yet subscribed.  NULL when out of
 * memory or the master cannot be found (rl_node_errstr). */
struct rlock_conn *rl_node_sub(struct rlock_node *n, int slot, int64_t hard);

/* Sentinel: 0 when a sentinel that answers names another master than the
 * one n's requests go to (n->failing_over set), else 1.  Others: 1. */
int rl_node_confirm(struct rlock_node *n, int64_t hard);
/* Close n's connections: the next request asks the sentinels again. */
void rl_node_drop(struct rlock_node *n);

/*
 * The masters of n: for a cluster every master serving slots (CLUSTER
 * SLOTS, which also fills the slot map), else n's one server.  Writes up
 * to max peer indexes to out and returns how many, or -1 with rl_node_errstr.
 */
int rl_node_masters(struct rlock_node *n, int64_t hard, size_t *out,
		    size_t max);

/* After rl_node_masters: where a connection of its own for slot goes (bench
 * opens thousands), and with which options. */
const struct rlock_url *rl_node_url(const struct rlock_node *n, int slot,
				    const struct rlock_conn_opts **o);

#endif
