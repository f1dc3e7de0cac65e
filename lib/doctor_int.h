/*
 * doctor_int.h - the parts of doctor that read what a server said, with
 * no connection: private to the library and its unit tests.
 */
#ifndef DOCTOR_INT_H
#define DOCTOR_INT_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* ---- INFO's text (info.c) ----------------------------------------------- */

/*
 * The decoder's bounds.  Redis 7's default INFO has about 200 fields and
 * INFO everything some 400 more (one per command and error seen): 1024
 * fields hold every real reply.  A line is "key:value", the key 1..64
 * bytes of printable ASCII without space (Redis writes [a-z0-9_|]); 8192
 * bytes hold the longest value Redis writes (a path, a module's line).
 */
#define INFO_FIELDS_MAX 1024
#define INFO_KEY_MAX 64
#define INFO_LINE_MAX 8192

struct info_field {
	const char *key, *val;		/* into the text, not terminated */
	size_t klen, vlen;
	int over;			/* the line was longer than
					 * INFO_LINE_MAX: vlen is cut */
};

/* The fields of one INFO text, in its order; the text stays the caller's. */
struct info {
	const char *text;
	size_t len;
	size_t n;
	size_t junk;			/* lines skipped: no ':', a bad key */
	int full;			/* more fields than the table holds */
	struct info_field f[INFO_FIELDS_MAX];
};

/* What a getter found. */
enum {
	INFO_BAD = -1,		/* present, but does not read: said twice, a
				 * line too long, not a number in range, or
				 * not found in a table that overflowed */
	INFO_ABSENT = 0,
	INFO_OK = 1,
};

/*
 * Split len bytes of INFO's text (no terminator needed; embedded NULs are
 * bytes like others) into in: lines end at "\n", a "\r" before it is
 * dropped, the last line needs no end; blank lines and "# Section" lines
 * are skipped; a line with no ':' or a bad key counts in junk.  Never
 * fails: what does not fit is remembered (over, full), and the getters
 * say INFO_BAD for it.
 */
void rl_info_parse(struct info *in, const char *text, size_t len);

/*
 * The field called key, in *v (n bytes, not terminated; "" when absent).
 * in may be NULL (INFO refused): absent.  Returns INFO_OK, INFO_ABSENT or
 * INFO_BAD.
 */
int rl_info_get(const struct info *in, const char *key, const char **v,
		size_t *n);

/* The field as a whole number in min..max (rlock_parse_ll).  Returns
 * INFO_OK with *v set, INFO_ABSENT, or INFO_BAD. */
int rl_info_num(const struct info *in, const char *key, long long min,
		long long max, long long *v);

/* The field's bytes, cut to fit buf (a NUL byte ends them; "" when
 * absent), also when it is INFO_BAD, for the message that says so: raw,
 * the cli escapes them where they are shown.  Returns what rl_info_get
 * returns. */
int rl_info_text(const struct info *in, const char *key, char *buf, size_t len);

/* A field of seconds with up to six decimals ("1.234567", as used_cpu_sys)
 * in microseconds.  Returns INFO_OK with *us set, INFO_ABSENT or INFO_BAD. */
int rl_info_seconds(const struct info *in, const char *key, long long *us);

/* One replica, from a "slaveN:" line. */
struct info_replica {
	int online;			/* state=online */
	long long lag;			/* seconds; -1 when not said (2.6) */
};

/*
 * The next "slaveN:" line from field *pos on (start at 0), whatever N and
 * however many connected_slaves claims: "ip=..,port=..,state=S,...,lag=L"
 * or Redis 2.6's "ip,port,state".  Returns INFO_OK with *r filled,
 * INFO_BAD for a line that does not decode (no state, a lag that is not
 * a number, an item said twice), INFO_ABSENT after the last; *pos moves
 * past the line returned.
 */
int rl_info_replica(const struct info *in, size_t *pos, struct info_replica *r);

/* ---- what the server is (doctor.c) -------------------------------------- */

/* What a server is, in its own words. */
struct server_id {
	char product[16];	/* "redis", "valkey": lower case, as said */
	char title[16];		/* "Redis", "Valkey": for messages */
	char version[32];	/* the product's own version */
	char compat[32];	/* the Redis version whose features it has */
};

/*
 * Tell which server this is, and its version, from INFO's fields (NULL
 * when INFO was refused) and HELLO's "server" and "version" fields ("" when
 * HELLO was not answered).  Valkey keeps Redis's fields for the Redis
 * version it is compatible with (INFO's redis_version is 7.2.4; from 8.0
 * HELLO too says "redis" and 7.2.4 when extended-redis-compatibility is
 * on) and names itself in INFO's server_name and valkey_version, and in
 * HELLO from 8.0 (7.2.x said "redis" there with its own version).  So
 * INFO's server_name and <server_name>_version come first, then HELLO,
 * then redis_version.  Returns 0, or -1 when no version is known (id's
 * version is then "").
 */
int rl_server_identify(const struct info *info, const char *hello_server,
		       const char *hello_version, struct server_id *id);

/* A version "MAJOR.MINOR.PATCH", each part 0..65535 and nothing else.
 * Returns 0 with the parts set, or -1. */
int rl_parse_version(const char *v, int *maj, int *min, int *pat);

/* ---- replies, decoded (doctor.c) ---------------------------------------- */

/* What one sentinel says of a master (SENTINEL MASTER). */
struct sentinel_master {
	char ip[256];
	long long port, quorum, others;
	/* What a failover takes; -1 when timing_bad is set. */
	long long down_after;		/* down-after-milliseconds */
	long long failover_timeout;	/* failover-timeout, ms */
	long long parallel_syncs;	/* replicas reconfigured at a time */
	long long replicas;		/* num-slaves: replicas it knows */
	const char *timing_bad;		/* the first of those four that does
					 * not decode, or NULL */
	char timing_val[32];		/* its value as said, raw and cut
					 * ("" when absent) */
};

/*
 * SENTINEL MASTER's flat [name, value, ...] array.  The address: a host
 * of 1..255 printable bytes with no space, a port 1..65535, a quorum
 * 1..1000000 and 0..1000000 other sentinels; when one does not decode,
 * -1 with its name in *bad.  Then the timing, each field on its own: a
 * down-after-milliseconds and a failover-timeout of 1..2^31-1 ms (what
 * the sentinel's config file takes), parallel-syncs 1..1000000 and
 * num-slaves 0..1000000; the first that is absent or does not read in
 * full and in range is named in m->timing_bad, and the four are -1 (never
 * 0 from junk).  Returns 0 with *bad NULL, or -1.
 */
int rl_decode_sentinel_master(const redisReply *r, struct sentinel_master *m,
			      const char **bad);

/*
 * CONFIG GET name's reply in RESP2: {name, value}, the name as asked.
 * Returns INFO_OK with the value in *v (n bytes, not terminated),
 * INFO_ABSENT for an empty array (no such parameter here), INFO_BAD for
 * anything else.
 */
int rl_decode_config(const redisReply *r, const char *name, const char **v,
		     size_t *n);

/* The replicas of one cluster master, as CLUSTER NODES on it says. */
struct cluster_replicas {
	long long known;		/* lines naming it as their master */
	long long failing;		/* of those, flagged fail or fail? */
};

/*
 * CLUSTER NODES' text (len bytes), asked of a master: the line flagged
 * myself names it; every line is "id addr flags master ping pong epoch
 * link [slot...]", an id of 40 hex digits, flags a comma list, a master
 * of "-" or 40 hex digits other than its own.  Returns 0 with c filled,
 * or -1 when a line does not decode or no single line is flagged myself.
 */
int rl_decode_cluster_nodes(const char *text, size_t len,
			    struct cluster_replicas *c);

/* ---- what a failover costs a lock (doctor.c) ---------------------------- */

/*
 * What the failover window is made of, measured on this project's
 * harness (sentinels with down-after 1000 ms: from the master's loss to a
 * new master taking writes, median 1.4 s, at most 3.4 s): the detection
 * the user configures, then ~2 s to elect and promote.  A cluster's
 * replica waits 500 ms + up to 500 ms + 1000 ms per rank before asking
 * for votes (rank 0, the most up to date, first), and the vote and its
 * spread take about a second more: ~2 s too.
 */
#define FAILOVER_ELECT_MS 2000
/* A batch of parallel-syncs replicas back by partial resync. */
#define FAILOVER_BATCH_MS 1000
/* A returning old master taken back as a replica: Sentinel waits four of
 * its 2 s publish periods after the old master says it is master; a
 * cluster node learns its new role by gossip within about a second. */
#define FAILOVER_RECONF_SENTINEL_MS 8000
#define FAILOVER_RECONF_CLUSTER_MS 1000
/* A full resync's transfer, conservatively: fork, send, load. */
#define FAILOVER_RESYNC_BYTES_PER_S 50000000LL

/* The inputs: what the servers said, or Redis's defaults. */
struct failover_in {
	int cluster;			/* 1: a cluster; 0: Sentinel */
	long long detect_ms;		/* down-after-milliseconds, or
					 * cluster-node-timeout: 1..2^31-1 */
	long long retry_ms;		/* Sentinel: 2 x failover-timeout */
	long long parallel_syncs;	/* Sentinel's, >= 1; a cluster 1 */
	long long validity;		/* cluster-replica-validity-factor;
					 * -1 for Sentinel */
	long long replicas;		/* R: online replicas now; -1 unknown */
	long long down;			/* replicas counted, not online */
	int diskless;			/* repl-diskless-sync yes */
	long long diskless_delay_s;	/* repl-diskless-sync-delay */
	long long dataset_bytes;	/* -1 unknown */
	long long min_replicas;		/* min-replicas-to-write in effect
					 * (0 when off) */
};

/* The advice.  Times are ms; -t and -w in whole seconds. */
struct failover_out {
	long long window_ms;		/* W: until a new master takes
					 * writes (with min-replicas' wait) */
	long long ttl_s;		/* hold with -t this or more */
	long long wait_s;		/* wait with -w this plus the hold */
	long long rides;		/* the largest --wait-replicas N a
					 * failover leaves met: R - 1 (or 0) */
	long long wait1_ms;		/* W with --wait-replicas 1; -1
					 * when a failover leaves it unmet */
	long long wait1_ttl_s, wait1_wait_s;	/* -1 likewise */
	long long full_ms;		/* a full resync: the diskless delay
					 * and the transfer */
	long long resync_ms;		/* once the old master is back, until
					 * it counts: reconfiguration, the
					 * diskless delay, the transfer */
	int stuck;			/* min-replicas-to-write >= R: the new
					 * master refuses writes until the
					 * old one is back */
	int level;			/* RLOCK_CHECK_NOTE or _WARN */
};

/* The advice from the inputs: no I/O, no overflow for inputs in their
 * ranges. */
void rl_failover_plan(const struct failover_in *in, struct failover_out *out);

/* The check's message for in and out, in numbers, cut to fit buf. */
void rl_failover_message(const struct failover_in *in,
			 const struct failover_out *out, char *buf, size_t len);

#endif /* DOCTOR_INT_H */
