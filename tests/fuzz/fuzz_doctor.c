/*
 * fuzz_doctor.c - what doctor's failover check reads from a server it
 * does not trust, and the advice it makes of it (lib/doctor.c): the
 * input's first byte picks the decoder, the rest is a reply (through the
 * reply guard and hiredis's reader, as a connection reads it) or text.
 *
 *   0: SENTINEL MASTER's array (rl_decode_sentinel_master): the address and
 *      the timing (down-after-milliseconds, failover-timeout,
 *      parallel-syncs, num-slaves)
 *   1: CONFIG GET's {name, value} (rl_decode_config), for each parameter
 *      the check asks
 *   2: CLUSTER NODES' text (rl_decode_cluster_nodes)
 *   3: the advice (rl_failover_plan, rl_failover_message) from inputs made of
 *      the bytes, each within the range its decoder lets through
 *
 * Beyond not crashing: a number that decodes is within its range, and a
 * timing field that does not decode is named with all four at -1 (never
 * 0 from junk), its value cut and terminated; a CONFIG value is inside
 * the reply; replicas counted are no more than the lines, the failing no
 * more than those; the advice's -t covers 1.5 times the window, its -w
 * the window, --wait-replicas 1 is never shorter than the window, and
 * the message is terminated within its buffer.
 */
#include <limits.h>

#include "doctor_int.h"
#include "fuzz.h"
#include "rlock_int.h"
#include "rlock_doctor.h"

static const char *const params[] = {
	"cluster-node-timeout", "cluster-replica-validity-factor",
	"repl-diskless-sync", "repl-diskless-sync-delay",
	"min-replicas-to-write", "min-replicas-max-lag",
};

static void sentinel_master(const redisReply *r)
{
	struct sentinel_master m;
	const char *bad = NULL;

	if (rl_decode_sentinel_master(r, &m, &bad) != 0) {
		REQUIRE(bad != NULL);
		return;
	}
	REQUIRE(bad == NULL);
	REQUIRE(m.ip[0] != '\0' && strlen(m.ip) <= 255);
	REQUIRE(m.port >= 1 && m.port <= 65535);
	REQUIRE(m.quorum >= 1 && m.others >= 0);
	REQUIRE(memchr(m.timing_val, '\0', sizeof(m.timing_val)) != NULL);
	if (m.timing_bad != NULL) {
		REQUIRE(m.down_after == -1 && m.failover_timeout == -1 &&
			m.parallel_syncs == -1 && m.replicas == -1);
		return;
	}
	REQUIRE(m.timing_val[0] == '\0');
	REQUIRE(m.down_after >= 1 && m.down_after <= INT_MAX);
	REQUIRE(m.failover_timeout >= 1 && m.failover_timeout <= INT_MAX);
	REQUIRE(m.parallel_syncs >= 1 && m.parallel_syncs <= 1000000);
	REQUIRE(m.replicas >= 0 && m.replicas <= 1000000);
}

static void config(const redisReply *r)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		const char *v = NULL;
		size_t n = 1;
		int rc = rl_decode_config(r, params[i], &v, &n);

		REQUIRE(rc == INFO_OK || rc == INFO_ABSENT || rc == INFO_BAD);
		REQUIRE(v != NULL);
		if (rc != INFO_OK) {
			REQUIRE(n == 0);
			continue;
		}
		REQUIRE(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
		REQUIRE(v == r->element[1]->str && n == r->element[1]->len);
	}
}

static void cluster_nodes(const uint8_t *data, size_t size)
{
	struct cluster_replicas c;
	size_t lines = 1;

	if (rl_decode_cluster_nodes((const char *)data, size, &c) != 0)
		return;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	REQUIRE(c.known >= 0 && c.known < (long long)lines);
	REQUIRE(c.failing >= 0 && c.failing <= c.known);
}

/* The next n bytes as a number in lo..hi, big-endian, then reduced. */
static long long take(const uint8_t **d, size_t *size, long long lo,
		      long long hi)
{
	unsigned long long v = 0,
			   span = (unsigned long long)hi - (unsigned long long)lo + 1;

	for (int i = 0; i < 8 && *size > 0; i++, (*d)++, (*size)--)
		v = v << 8 | **d;
	/* lo + v in unsigned arithmetic: no signed overflow on the way. */
	return (long long)((unsigned long long)lo + (span == 0 ? v : v % span));
}

static void advice(const uint8_t *d, size_t size)
{
	struct failover_in in;
	struct failover_out o;
	char msg[1024];

	memset(&in, 0, sizeof(in));
	in.cluster = (int)take(&d, &size, 0, 1);
	in.detect_ms = take(&d, &size, 1, INT_MAX);
	in.retry_ms = 2 * take(&d, &size, 1, INT_MAX);
	in.parallel_syncs = in.cluster ? 1000000 : take(&d, &size, 1, 1000000);
	in.validity = in.cluster ? take(&d, &size, 0, INT_MAX) : -1;
	in.replicas = take(&d, &size, -1, 1000000);
	in.down = take(&d, &size, 0, 1000000);
	in.diskless = (int)take(&d, &size, 0, 1);
	in.diskless_delay_s = take(&d, &size, 0, INT_MAX);
	in.dataset_bytes = take(&d, &size, -1, LLONG_MAX);
	in.min_replicas = take(&d, &size, 0, INT_MAX);
	rl_failover_plan(&in, &o);
	REQUIRE(o.window_ms >= in.detect_ms + FAILOVER_ELECT_MS);
	REQUIRE(o.ttl_s * 2000 >= o.window_ms * 3);
	REQUIRE(o.wait_s * 1000 >= o.window_ms);
	REQUIRE(o.wait1_ms == -1 || (o.wait1_ms >= o.window_ms &&
				     o.wait1_ttl_s * 2000 >= o.wait1_ms * 3));
	REQUIRE((o.wait1_ms == -1) == (o.wait1_ttl_s == -1));
	REQUIRE(o.resync_ms >= FAILOVER_RECONF_CLUSTER_MS);
	REQUIRE(o.level == RLOCK_CHECK_NOTE || o.level == RLOCK_CHECK_WARN);
	REQUIRE(!o.stuck || o.level == RLOCK_CHECK_WARN);
	memset(msg, 'Z', sizeof(msg));
	rl_failover_message(&in, &o, msg, (size_t)(size % 64) + 1);
	REQUIRE(memchr(msg, '\0', (size % 64) + 1) != NULL);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	REQUIRE(msg[0] != '\0' && strlen(msg) < sizeof(msg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_guard g;
	redisReader *rd;
	void *r = NULL;
	int what;

	if (size < 1)
		return 0;
	what = data[0] % 4;
	data++;
	size--;
	if (what == 2) {
		cluster_nodes(data, size);
		return 0;
	}
	if (what == 3) {
		advice(data, size);
		return 0;
	}
	/* As a connection reads it: the reply guard first (lib/resp.c), so
	 * that hiredis never holds what no server may declare. */
	memset(&g, 0, sizeof(g));
	if (rl_resp_guard_feed(&g, (const char *)data, size) != NULL)
		return 0;
	rd = redisReaderCreate();
	if (rd == NULL)
		abort();
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK &&
	    redisReaderGetReply(rd, &r) == REDIS_OK && r != NULL) {
		if (what == 0)
			sentinel_master(r);
		else
			config(r);
		freeReplyObject(r);
	}
	redisReaderFree(rd);
	return 0;
}
