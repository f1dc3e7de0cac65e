/*
 * test_doctor.c - what doctor's version line calls a server, from what
 * its INFO and HELLO said.  The Redis sample is INFO's Server section from
 * redis-server 7.0.15; the Valkey ones follow genValkeyInfoString and
 * helloCommand in Valkey's src/server.c and src/networking.c (7.2.7,
 * 8.0.1, and an unstable build, whose version is 255.255.255).  Then the
 * INFO decoder (lib/info.c) against what a broken or hostile server may
 * say, and the version parser.  Then doctor's failover check: the advice
 * (rl_failover_plan, rl_failover_message) from made-up inputs, and the decoders
 * of what it reads (SENTINEL MASTER, CONFIG GET, CLUSTER NODES).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "doctor_int.h"
#include "harness.h"
#include "rlock_doctor.h"

static const char redis_7_0_15[] =
	"# Server\r\n"
	"redis_version:7.0.15\r\n"
	"redis_git_sha1:00000000\r\n"
	"redis_git_dirty:0\r\n"
	"redis_build_id:ae4d7c971a948f0\r\n"
	"redis_mode:standalone\r\n"
	"os:Linux 6.18.44-fc-v657 x86_64\r\n"
	"arch_bits:64\r\n"
	"monotonic_clock:POSIX clock_gettime\r\n"
	"multiplexing_api:epoll\r\n"
	"atomicvar_api:c11-builtin\r\n"
	"gcc_version:12.2.0\r\n"
	"process_id:4215\r\n"
	"process_supervised:no\r\n"
	"run_id:fdf8dfcc1adb04a87f65359f7fabdf49abf206f8\r\n"
	"tcp_port:27711\r\n"
	"server_time_usec:1795571025017658\r\n"
	"uptime_in_seconds:55\r\n"
	"uptime_in_days:0\r\n"
	"hz:10\r\n"
	"configured_hz:10\r\n"
	"lru_clock:408912\r\n"
	"executable:/usr/bin/redis-server\r\n"
	"config_file:\r\n"
	"io_threads_active:0\r\n"
	"\r\n"
	"# Clients\r\n"
	"connected_clients:1\r\n";

/* Valkey 8.0 says server_mode, or redis_mode with
 * extended-redis-compatibility on (MODE is the one it says). */
#define VALKEY_INFO(VERSION, MODE) \
	"# Server\r\n" \
	"redis_version:7.2.4\r\n" \
	"server_name:valkey\r\n" \
	"valkey_version:" VERSION "\r\n" \
	"redis_git_sha1:00000000\r\n" \
	"redis_git_dirty:0\r\n" \
	"redis_build_id:5b6ac4ce1a2c2b4e\r\n" \
	MODE ":standalone\r\n" \
	"os:Linux 6.1.0-18-amd64 x86_64\r\n" \
	"arch_bits:64\r\n" \
	"monotonic_clock:POSIX clock_gettime\r\n" \
	"multiplexing_api:epoll\r\n" \
	"gcc_version:12.2.0\r\n" \
	"process_id:1\r\n" \
	"process_supervised:no\r\n" \
	"run_id:3c2b83ce6e4d1c6e9a1f3d6f4a3e0c5b8f9d2a71\r\n" \
	"tcp_port:6379\r\n" \
	"server_time_usec:1733154032447371\r\n" \
	"uptime_in_seconds:12\r\n" \
	"uptime_in_days:0\r\n" \
	"hz:10\r\n" \
	"configured_hz:10\r\n" \
	"lru_clock:7213872\r\n" \
	"executable:/usr/local/bin/valkey-server\r\n" \
	"config_file:\r\n" \
	"io_threads_active:0\r\n" \
	"availability_zone:\r\n" \
	"listener0:name=tcp,bind=*,bind=-::*,port=6379\r\n" \
	"\r\n" \
	"# Clients\r\n" \
	"connected_clients:1\r\n"

static const char valkey_8_0_1[] = VALKEY_INFO("8.0.1", "server_mode");
static const char valkey_8_0_1_compat[] = VALKEY_INFO("8.0.1", "redis_mode");
static const char valkey_7_2_7[] = VALKEY_INFO("7.2.7", "redis_mode");
static const char valkey_unstable[] = VALKEY_INFO("255.255.255",
						  "server_mode");

/* Redis 5 has no HELLO. */
static const char redis_5_0_14[] =
	"# Server\r\n"
	"redis_version:5.0.14\r\n"
	"redis_git_sha1:00000000\r\n"
	"redis_mode:standalone\r\n";

static const struct {
	const char *what, *info, *hello_server, *hello_version;
	int rc;
	const char *product, *title, *version, *compat;
} cases[] = {
	{ "Redis 7.0.15", redis_7_0_15, "redis", "7.0.15",
	  0, "redis", "Redis", "7.0.15", "7.0.15" },
	{ "Redis 7.0.15, INFO refused", NULL, "redis", "7.0.15",
	  0, "redis", "Redis", "7.0.15", "7.0.15" },
	{ "Redis 5, no HELLO", redis_5_0_14, "", "",
	  0, "redis", "Redis", "5.0.14", "5.0.14" },
	{ "Valkey 8.0.1", valkey_8_0_1, "valkey", "8.0.1",
	  0, "valkey", "Valkey", "8.0.1", "7.2.4" },
	/* HELLO in Redis's words: INFO still tells. */
	{ "Valkey 8.0.1, extended-redis-compatibility", valkey_8_0_1_compat,
	  "redis", "7.2.4", 0, "valkey", "Valkey", "8.0.1", "7.2.4" },
	{ "Valkey 7.2.7", valkey_7_2_7, "redis", "7.2.7",
	  0, "valkey", "Valkey", "7.2.7", "7.2.4" },
	{ "Valkey unstable", valkey_unstable, "valkey", "255.255.255",
	  0, "valkey", "Valkey", "255.255.255", "7.2.4" },
	{ "Valkey 8.0.1, INFO refused", NULL, "valkey", "8.0.1",
	  0, "valkey", "Valkey", "8.0.1", "7.2.0" },
	{ "Valkey 8.0.1, no HELLO", valkey_8_0_1, "", "",
	  0, "valkey", "Valkey", "8.0.1", "7.2.4" },
	/* Nothing tells it apart from Redis 7.2.4 then. */
	{ "Valkey 8.0.1 compatible, INFO refused", NULL, "redis", "7.2.4",
	  0, "redis", "Redis", "7.2.4", "7.2.4" },
	{ "nothing said", NULL, "", "",
	  -1, "redis", "Redis", "", "" },
};

static struct info info;

static void test_identify(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct server_id id;
		int rc;

		unit_context("%s", cases[i].what);
		memset(&id, 'Z', sizeof(id));
		if (cases[i].info != NULL)
			rl_info_parse(&info, cases[i].info,
				      strlen(cases[i].info));
		rc = rl_server_identify(cases[i].info != NULL ? &info : NULL,
					cases[i].hello_server,
					cases[i].hello_version, &id);
		CHECK_INT(rc, cases[i].rc);
		CHECK_STR(id.product, cases[i].product);
		CHECK_STR(id.title, cases[i].title);
		CHECK_STR(id.version, cases[i].version);
		CHECK_STR(id.compat, cases[i].compat);
	}
	unit_context(NULL);
}

/* ---- the INFO decoder --------------------------------------------------- */

static const char replication[] =
	"# Replication\r\n"
	"role:master\r\n"
	"connected_slaves:2\r\n"
	"slave0:ip=10.0.0.2,port=6379,state=online,offset=4242,lag=0\r\n"
	"slave1:ip=10.0.0.3,port=6379,state=wait_bgsave,offset=0,lag=12\r\n"
	"master_failover_state:no-failover\r\n"
	"\r\n"
	"# Memory\r\n"
	"used_memory:1048576\r\n"
	"used_memory_human:1.00M\r\n"
	"maxmemory:0\r\n"
	"\r\n"
	"# CPU\r\n"
	"used_cpu_sys:1.250000\r\n"
	"used_cpu_user:0.000001\r\n";

static int num(const char *text, const char *key, long long min,
	       long long max, long long *v)
{
	rl_info_parse(&info, text, strlen(text));
	return rl_info_num(&info, key, min, max, v);
}

static void test_info_fields(void)
{
	char buf[64];
	long long v = 7;

	rl_info_parse(&info, replication, strlen(replication));
	CHECK_INT(info.n, 10);
	CHECK_INT(info.junk, 0);
	CHECK_INT(rl_info_num(&info, "connected_slaves", 0, 1000000, &v),
		  INFO_OK);
	CHECK_INT(v, 2);
	CHECK_INT(rl_info_text(&info, "role", buf, sizeof(buf)), INFO_OK);
	CHECK_STR(buf, "master");
	CHECK_INT(rl_info_text(&info, "maxmemory_policy", buf, sizeof(buf)),
		  INFO_ABSENT);
	CHECK_STR(buf, "");
	/* A prefix of a key is not the key. */
	CHECK_INT(rl_info_num(&info, "used_memory_h", 0, 10, &v), INFO_ABSENT);
	CHECK_INT(rl_info_num(NULL, "role", 0, 10, &v), INFO_ABSENT);

	/* Out of range, too big for any integer, not a number. */
	CHECK_INT(num("connected_slaves:9223372036854775807\r\n",
		      "connected_slaves", 0, 1000000, &v), INFO_BAD);
	CHECK_INT(num("used_memory:99999999999999999999\r\n", "used_memory",
		      0, LLONG_MAX, &v), INFO_BAD);
	CHECK_INT(num("used_memory:abc\r\n", "used_memory", 0, LLONG_MAX,
		      &v), INFO_BAD);
	CHECK_INT(rl_info_text(&info, "used_memory", buf, sizeof(buf)),
		  INFO_OK);
	CHECK_STR(buf, "abc");
	CHECK_INT(num("maxmemory:-1\r\n", "maxmemory", 0, LLONG_MAX, &v),
		  INFO_BAD);
	CHECK_INT(num("maxmemory: 1\r\n", "maxmemory", 0, LLONG_MAX, &v),
		  INFO_BAD);
	CHECK_INT(num("maxmemory:1 \r\n", "maxmemory", 0, LLONG_MAX, &v),
		  INFO_BAD);
	CHECK_INT(num("maxmemory:\r\n", "maxmemory", 0, LLONG_MAX, &v),
		  INFO_BAD);
	CHECK_INT(num("maxmemory:1\r\r\n", "maxmemory", 0, LLONG_MAX, &v),
		  INFO_BAD);
	/* Said twice: which one is meant? */
	CHECK_INT(num("maxmemory:0\r\nmaxmemory:100\r\n", "maxmemory", 0,
		      LLONG_MAX, &v), INFO_BAD);

	/* Lines without ':', a key with a space or a control byte: skipped
	 * and counted; the others still read. */
	v = 0;
	CHECK_INT(num("garbage\r\nbad key:1\r\n\x1b:2\r\n:3\r\nhz:10\r\n",
		      "hz", 0, 500, &v), INFO_OK);
	CHECK_INT(v, 10);
	CHECK_INT(info.junk, 4);
	CHECK_INT(info.n, 1);

	/* No trailing CRLF; bare LF; an embedded NUL is a byte. */
	CHECK_INT(num("a:1\r\nhz:10", "hz", 0, 500, &v), INFO_OK);
	CHECK_INT(v, 10);
	CHECK_INT(num("a:1\nhz:11\n", "hz", 0, 500, &v), INFO_OK);
	CHECK_INT(v, 11);
	rl_info_parse(&info, "hz:1\0x\r\nb:2", 11);
	CHECK_INT(rl_info_num(&info, "hz", 0, 500, &v), INFO_BAD);
	CHECK_INT(rl_info_num(&info, "b", 0, 500, &v), INFO_OK);
	CHECK_INT(rl_info_text(&info, "hz", buf, sizeof(buf)), INFO_OK);
	CHECK_STR(buf, "1");

	/* A control sequence in a value is kept as it is, for the cli's
	 * one funnel to escape where it is shown (tests/doctor_hostile). */
	CHECK_INT(num("maxmemory_policy:\x1b[2Jx\r\n", "x", 0, 1, &v),
		  INFO_ABSENT);
	CHECK_INT(rl_info_text(&info, "maxmemory_policy", buf, sizeof(buf)),
		  INFO_OK);
	CHECK_STR(buf, "\x1b[2Jx");
}

static void test_info_bounds(void)
{
	static char text[(INFO_FIELDS_MAX + 10) * 16 + INFO_LINE_MAX + 64];
	char buf[32];
	long long v;
	size_t o = 0;

	/* An overlong line: its key reads as unreadable, the next line is
	 * whole. */
	o += (size_t)sprintf(text, "executable:");
	memset(text + o, 'x', INFO_LINE_MAX);
	o += INFO_LINE_MAX;
	o += (size_t)sprintf(text + o, "\r\nhz:10\r\n");
	rl_info_parse(&info, text, o);
	CHECK_INT(rl_info_text(&info, "executable", buf, sizeof(buf)), INFO_BAD);
	CHECK_STR(buf, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	CHECK_INT(rl_info_num(&info, "hz", 0, 500, &v), INFO_OK);

	/* A key of 65 bytes is junk; 64 is a key. */
	rl_info_parse(&info, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk:1\r\n"
		      "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk:2\r\n",
		      136);
	CHECK_INT(info.junk, 1);
	CHECK_INT(info.n, 1);

	/* More fields than the table holds: what is in it reads, anything
	 * else may be beyond it, so it does not. */
	o = 0;
	for (int i = 0; i < INFO_FIELDS_MAX + 10; i++)
		o += (size_t)sprintf(text + o, "f%d:%d\r\n", i, i);
	rl_info_parse(&info, text, o);
	CHECK(info.full);
	CHECK_INT(info.n, INFO_FIELDS_MAX);
	CHECK_INT(rl_info_num(&info, "f5", 0, 100, &v), INFO_OK);
	CHECK_INT(v, 5);
	CHECK_INT(rl_info_num(&info, "maxmemory", 0, 100, &v), INFO_BAD);
}

static void test_info_seconds(void)
{
	static const struct {
		const char *text;
		int rc;
		long long us;
	} t[] = {
		{ "s:1.250000", INFO_OK, 1250000 },
		{ "s:0.000001", INFO_OK, 1 },
		{ "s:12", INFO_OK, 12000000 },
		{ "s:3.5", INFO_OK, 3500000 },
		{ "s:1.", INFO_BAD, 0 },
		{ "s:.5", INFO_BAD, 0 },
		{ "s:-1.0", INFO_BAD, 0 },
		{ "s:-0.5", INFO_BAD, 0 },
		{ "s:1.-5", INFO_BAD, 0 },
		{ "s:1.1234567", INFO_BAD, 0 },
		{ "s:1e3", INFO_BAD, 0 },
		{ "s:99999999999999999999.0", INFO_BAD, 0 },
		{ "s:", INFO_BAD, 0 },
		{ "t:1", INFO_ABSENT, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		long long us = -7;
		int rc;

		unit_context("%s", t[i].text);
		rl_info_parse(&info, t[i].text, strlen(t[i].text));
		rc = rl_info_seconds(&info, "s", &us);
		CHECK_INT(rc, t[i].rc);
		if (rc == INFO_OK)
			CHECK_INT(us, t[i].us);
	}
	unit_context(NULL);
}

/* Every slave line is walked, whatever connected_slaves says. */
static int replicas(const char *text, int *online, long long *lag, int max)
{
	struct info_replica r;
	size_t pos = 0;
	int n = 0, rc;

	rl_info_parse(&info, text, strlen(text));
	while ((rc = rl_info_replica(&info, &pos, &r)) != INFO_ABSENT) {
		if (rc == INFO_BAD)
			return -1;
		if (n < max) {
			online[n] = r.online;
			lag[n] = r.lag;
		}
		n++;
	}
	return n;
}

static void test_info_replicas(void)
{
	int online[4];
	long long lag[4];

	CHECK_INT(replicas(replication, online, lag, 4), 2);
	CHECK_INT(online[0], 1);
	CHECK_INT(lag[0], 0);
	CHECK_INT(online[1], 0);
	CHECK_INT(lag[1], 12);
	/* A count of 2^63-1 and one line: one replica walked. */
	CHECK_INT(replicas("connected_slaves:9223372036854775807\r\n"
			   "slave0:ip=a,port=1,state=online,offset=1,lag=1\r\n",
			   online, lag, 4), 1);
	/* A count of 3 and no lines at all. */
	CHECK_INT(replicas("connected_slaves:3\r\n", online, lag, 4), 0);
	/* Redis 2.6. */
	CHECK_INT(replicas("slave0:127.0.0.1,6380,online\r\n", online, lag,
			   4), 1);
	CHECK_INT(online[0], 1);
	CHECK_INT(lag[0], -1);
	/* Not slave lines. */
	CHECK_INT(replicas("slaves:1\r\nslave:1\r\nslave-1:state=online\r\n"
			   "slave_read_only:1\r\nslave_repl_offset:5\r\n",
			   online, lag, 4), 0);
	/* Lines that do not decode. */
	CHECK_INT(replicas("slave0:ip=a,port=1,state=online,lag=abc\r\n",
			   online, lag, 4), -1);
	CHECK_INT(replicas("slave0:ip=a,port=1,lag=0\r\n", online, lag, 4),
		  -1);
	CHECK_INT(replicas("slave0:ip=a,state=online,state=online,lag=0\r\n",
			   online, lag, 4), -1);
	CHECK_INT(replicas("slave0:ip=a,state=online,lag=0,lag=0\r\n", online,
			   lag, 4), -1);
	CHECK_INT(replicas("slave0:ip=a,state=on\x1bline,lag=0\r\n", online,
			   lag, 4), -1);
	CHECK_INT(replicas("slave0:ip=a,state=online,lag=-1\r\n", online,
			   lag, 4), -1);
	CHECK_INT(replicas("slave0:ip=a,junk,state=online\r\n", online, lag,
			   4), -1);
	CHECK_INT(replicas("slave0:\r\n", online, lag, 4), -1);
}

static void test_version(void)
{
	static const struct {
		const char *v;
		int rc, maj, min, pat;
	} t[] = {
		{ "7.0.15", 0, 7, 0, 15 },
		{ "255.255.255", 0, 255, 255, 255 },
		{ "2.6.12", 0, 2, 6, 12 },
		{ "7.0", -1, 0, 0, 0 },
		{ "7.0.15.1", -1, 0, 0, 0 },
		{ "7.0.15-rc1", -1, 0, 0, 0 },
		{ "-7.0.1", -1, 0, 0, 0 },
		{ "7..1", -1, 0, 0, 0 },
		{ "99999999999.0.0", -1, 0, 0, 0 },
		{ "", -1, 0, 0, 0 },
		{ "\\x1b[2J", -1, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int maj = -1, min = -1, pat = -1;

		unit_context("%s", t[i].v);
		CHECK_INT(rl_parse_version(t[i].v, &maj, &min, &pat), t[i].rc);
		if (t[i].rc == 0) {
			CHECK_INT(maj, t[i].maj);
			CHECK_INT(min, t[i].min);
			CHECK_INT(pat, t[i].pat);
		}
	}
	unit_context(NULL);
}

/* ---- the failover check ------------------------------------------------ */

/* ha_helper's Sentinel set: down-after 1000ms, failover-timeout 4000ms,
 * parallel-syncs 1, diskless sync with delay 0; R replicas online. */
static struct failover_in sentinel_set(long long r)
{
	struct failover_in in = { 0 };

	in.detect_ms = 1000;
	in.retry_ms = 8000;
	in.parallel_syncs = 1;
	in.validity = -1;
	in.replicas = r;
	in.diskless = 1;
	in.dataset_bytes = 312000;
	return in;
}

static void test_failover_plan(void)
{
	struct failover_in in;
	struct failover_out o;

	/* Two replicas: W = 1000 + 2000; -t 1.5 x 3s = 4.5, so 5s; one
	 * replica left for --wait-replicas 1, back in a batch, or by a full
	 * resync (no delay, 1s for 312kB): 5s, -t 7.5 so 8s.  The old
	 * master's: 8s to take it back and the same 1s. */
	in = sentinel_set(2);
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 3000);
	CHECK_INT(o.ttl_s, 5);
	CHECK_INT(o.wait_s, 3);
	CHECK_INT(o.rides, 1);
	CHECK_INT(o.full_ms, 1000);
	CHECK_INT(o.wait1_ms, 5000);
	CHECK_INT(o.wait1_ttl_s, 8);
	CHECK_INT(o.wait1_wait_s, 5);
	CHECK_INT(o.resync_ms, 9000);
	CHECK_INT(o.stuck, 0);
	CHECK_INT(o.level, RLOCK_CHECK_NOTE);

	/* One replica: a failover leaves none for --wait-replicas 1. */
	in = sentinel_set(1);
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 3000);
	CHECK_INT(o.rides, 0);
	CHECK_INT(o.wait1_ms, -1);
	CHECK_INT(o.wait1_ttl_s, -1);
	CHECK_INT(o.level, RLOCK_CHECK_WARN);

	/* min-replicas-to-write 1 with 1 replica: stuck. */
	in = sentinel_set(1);
	in.min_replicas = 1;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.stuck, 1);
	CHECK_INT(o.level, RLOCK_CHECK_WARN);

	/* ... with 2: writes resume a batch later, which --wait-replicas 1
	 * waits for anyway. */
	in = sentinel_set(2);
	in.min_replicas = 1;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.stuck, 0);
	CHECK_INT(o.window_ms, 4000);
	CHECK_INT(o.ttl_s, 6);
	CHECK_INT(o.wait_s, 4);
	CHECK_INT(o.wait1_ms, 5000);
	CHECK_INT(o.level, RLOCK_CHECK_NOTE);

	/* Redis's default diskless delay, 5s: a full resync of the replica
	 * left takes 6s, --wait-replicas 1 rides out 10s with -t 15s. */
	in = sentinel_set(2);
	in.diskless_delay_s = 5;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.full_ms, 6000);
	CHECK_INT(o.wait1_ms, 10000);
	CHECK_INT(o.wait1_ttl_s, 15);
	CHECK_INT(o.wait1_wait_s, 10);

	/* min-replicas 3 of 5, parallel-syncs 2: two batches. */
	in = sentinel_set(5);
	in.min_replicas = 3;
	in.parallel_syncs = 2;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 5000);
	CHECK_INT(o.wait1_ms, 6000);
	CHECK_INT(o.ttl_s, 8);		/* 7.5 up */

	/* No replica: no failover, a note; one not online: a warning. */
	in = sentinel_set(0);
	rl_failover_plan(&in, &o);
	CHECK_INT(o.level, RLOCK_CHECK_NOTE);
	CHECK_INT(o.wait1_ms, -1);
	in = sentinel_set(2);
	in.down = 1;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.level, RLOCK_CHECK_WARN);

	/* Unknown replicas: the window stands, --wait-replicas unknown. */
	in = sentinel_set(-1);
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 3000);
	CHECK_INT(o.wait1_ms, -1);
	CHECK_INT(o.level, RLOCK_CHECK_NOTE);

	/* down-after 1500: W 3.5s, -t 5.25 up to 6s, -w 4s. */
	in = sentinel_set(2);
	in.detect_ms = 1500;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 3500);
	CHECK_INT(o.ttl_s, 6);
	CHECK_INT(o.wait_s, 4);

	/* A cluster, node timeout 1000: W 3s; the old master rejoins by
	 * itself (1s), a disk-based sync of 120MB at 50MB/s: 3s. */
	in = sentinel_set(1);
	in.cluster = 1;
	in.retry_ms = 0;
	in.validity = 10;
	in.parallel_syncs = 1000000;
	in.diskless = 0;
	in.diskless_delay_s = 5;
	in.dataset_bytes = 120000000;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.window_ms, 3000);
	CHECK_INT(o.ttl_s, 5);
	CHECK_INT(o.resync_ms, 4000);
	CHECK_INT(o.level, RLOCK_CHECK_WARN);
	/* Diskless with its default delay: 5s more; the size unknown: none. */
	in.diskless = 1;
	in.dataset_bytes = -1;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.resync_ms, 6000);

	/* The ranges' ends: no overflow. */
	in = sentinel_set(1000000);
	in.detect_ms = INT_MAX;
	in.min_replicas = INT_MAX;
	in.diskless_delay_s = INT_MAX;
	in.dataset_bytes = LLONG_MAX;
	rl_failover_plan(&in, &o);
	CHECK_INT(o.stuck, 1);
	CHECK_INT(o.window_ms, (long long)INT_MAX + 2000);
	CHECK(o.resync_ms > (long long)INT_MAX * 1000);
}

static void test_failover_message(void)
{
	struct failover_in in;
	struct failover_out o;
	char msg[1024];

	in = sentinel_set(2);
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK_STR(msg, "failover window ~3s: down-after 1000ms, ~2s to elect "
		  "and promote (a failed try is retried after 8s, 2 x "
		  "failover-timeout). Hold with -t 5s or more (renewals come "
		  "every TTL/3), wait with -w 3s plus the hold. "
		  "--wait-replicas 1: -t 8s, -w 5s plus the hold; the new "
		  "master keeps 1 replica, back by partial resync ~1s per "
		  "parallel-syncs batch of 1, or by a full one (~1s more) "
		  "when they got writes the promoted one missed; N above 1 "
		  "waits for the old "
		  "master's full resync (~9s once it is back: 8s to take it "
		  "back as a replica, diskless delay 0s, 312kB of data at "
		  "50MB/s), for good if it never returns.");

	in = sentinel_set(1);
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK(strstr(msg, " --wait-replicas 1 cannot ride it out: the new "
		     "master has no replica, so no grant or renewal counts "
		     "until the old master is back and fully resynced (~9s "
		     "once it is back: ") != NULL);
	CHECK(strstr(msg, "), none at all if it never returns; add a "
		     "replica.") != NULL);

	in = sentinel_set(1);
	in.min_replicas = 1;
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK(strstr(msg, "; but min-replicas-to-write 1 with 1 replica "
		     "online: the new master refuses writes (no grant, no "
		     "renewal) until the old master is back and resynced "
		     "(~9s once it is back: ") != NULL);
	CHECK(strstr(msg, "Hold with") == NULL);

	in = sentinel_set(0);
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK_STR(msg, "no failover: no replica to promote; while the master "
		  "is down no lock can be taken, and --wait-replicas cannot "
		  "be met");

	in = sentinel_set(1);
	in.cluster = 1;
	in.validity = 10;
	in.parallel_syncs = 1000000;
	in.down = 1;
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK(strncmp(msg, "1 of 2 replicas not online (counted as none "
		      "below); failover window ~3s: cluster-node-timeout "
		      "1000ms, ~2s for the best replica's election delay and "
		      "the vote. Hold with -t 5s", 147) == 0);
	CHECK(strstr(msg, "(~2s once it is back: 1s to take it back as a "
		     "replica, diskless delay 0s, 312kB of data at 50MB/s)") !=
	      NULL);
	CHECK(strstr(msg, " A replica cut off for over 20s (node-timeout x "
		     "validity-factor 10, + 10s) is never promoted.") != NULL);

	in = sentinel_set(2);
	in.detect_ms = 1500;
	in.dataset_bytes = 1234567;
	rl_failover_plan(&in, &o);
	rl_failover_message(&in, &o, msg, sizeof(msg));
	CHECK(strncmp(msg, "failover window ~3.5s: down-after 1500ms", 40) ==
	      0);
	CHECK(strstr(msg, "1.2MB of data") != NULL);

	/* Cut to fit, terminated. */
	rl_failover_message(&in, &o, msg, 20);
	CHECK_STR(msg, "failover window ~3.");
}

#define SM_HEAD "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$4\r\n6379\r\n" \
	"$6\r\nquorum\r\n$1\r\n2\r\n$19\r\nnum-other-sentinels\r\n$1\r\n2\r\n"

static void test_decode_sentinel_master(void)
{
	static const struct {
		const char *resp;
		int rc;
		const char *bad, *timing_bad, *val;
		long long down_after;
	} t[] = {
		{ "*16\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$4\r\n1000\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n1\r\n"
		  "$10\r\nnum-slaves\r\n$1\r\n2\r\n", 0, NULL, NULL, "", 1000 },
		/* Junk, negative, zero and huge: named, never a number. */
		{ "*16\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$3\r\nabc\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n1\r\n"
		  "$10\r\nnum-slaves\r\n$1\r\n2\r\n", 0, NULL,
		  "down-after-milliseconds", "abc", -1 },
		{ "*16\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$2\r\n-5\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n1\r\n"
		  "$10\r\nnum-slaves\r\n$1\r\n2\r\n", 0, NULL,
		  "down-after-milliseconds", "-5", -1 },
		{ "*16\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$10\r\n2147483648\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n1\r\n"
		  "$10\r\nnum-slaves\r\n$1\r\n2\r\n", 0, NULL,
		  "down-after-milliseconds", "2147483648", -1 },
		{ "*16\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$4\r\n1000\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n0\r\n"
		  "$10\r\nnum-slaves\r\n$1\r\n2\r\n", 0, NULL, "parallel-syncs",
		  "0", -1 },
		/* Absent: named, with no value. */
		{ "*14\r\n" SM_HEAD "$23\r\ndown-after-milliseconds\r\n$4\r\n1000\r\n"
		  "$16\r\nfailover-timeout\r\n$4\r\n4000\r\n"
		  "$14\r\nparallel-syncs\r\n$1\r\n1\r\n", 0, NULL, "num-slaves",
		  "", -1 },
		/* The address still decides the whole. */
		{ "*2\r\n$2\r\nip\r\n$1\r\n \r\n", -1, "ip", NULL, "", 0 },
		{ "*8\r\n" SM_HEAD, 0, NULL, "down-after-milliseconds", "", -1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		struct sentinel_master m;
		const char *bad = "x";

		unit_context("sentinel master %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_sentinel_master(r, &m, &bad), t[i].rc);
		CHECK_STR(bad, t[i].bad);
		if (t[i].rc == 0) {
			CHECK_STR(m.timing_bad, t[i].timing_bad);
			CHECK_STR(m.timing_val, t[i].val);
			CHECK_INT(m.down_after, t[i].down_after);
			CHECK_INT(m.port, 6379);
		}
		freeReplyObject(r);
	}
	unit_context(NULL);
}

static void test_decode_config(void)
{
	static const struct {
		const char *resp;
		int rc;
		const char *v;
	} t[] = {
		{ "*2\r\n$20\r\ncluster-node-timeout\r\n$4\r\n1000\r\n", INFO_OK,
		  "1000" },
		{ "*0\r\n", INFO_ABSENT, "" },
		{ "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n", INFO_BAD, "" },
		{ "*4\r\n$20\r\ncluster-node-timeout\r\n$1\r\n1\r\n"
		  "$20\r\ncluster-node-timeout\r\n$1\r\n2\r\n", INFO_BAD, "" },
		{ "*2\r\n$20\r\ncluster-node-timeout\r\n:1000\r\n", INFO_BAD, "" },
		{ "$4\r\n1000\r\n", INFO_BAD, "" },
		{ "-NOPERM no\r\n", INFO_BAD, "" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		const char *v = NULL;
		size_t n = 99;

		unit_context("config %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_config(r, "cluster-node-timeout", &v, &n),
			  t[i].rc);
		CHECK_MEM(v, n, t[i].v, strlen(t[i].v));
		freeReplyObject(r);
	}
	unit_context(NULL);
}

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccc"

static void test_decode_cluster_nodes(void)
{
	static const struct {
		const char *text;
		int rc;
		long long known, failing;
	} t[] = {
		{ ID_A " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n"
		  ID_B " 127.0.0.1:7001@17001 slave " ID_A " 0 1 1 connected\n"
		  ID_C " 127.0.0.1:7002@17002 slave,fail " ID_A " 0 1 1 connected\n",
		  0, 2, 1 },
		/* Another master's replica is not ours; CRLF, no last end. */
		{ ID_B " 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-16383\r\n"
		  ID_C " 127.0.0.1:7002@17002 slave " ID_B " 0 1 2 connected\r\n"
		  ID_A " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460",
		  0, 0, 0 },
		{ ID_A " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected\n"
		  ID_B " 127.0.0.1:7001@17001 slave,fail? " ID_A " 0 1 1 connected\n",
		  0, 1, 1 },
		/* No myself, two, a short line, a bad id, a double space. */
		{ ID_A " 127.0.0.1:7000@17000 master - 0 0 1 connected\n", -1, 0, 0 },
		{ ID_A " x myself,master - 0 0 1 connected\n"
		  ID_B " y myself,master - 0 0 1 connected\n", -1, 0, 0 },
		{ ID_A " x myself,master - 0 0 1\n", -1, 0, 0 },
		{ "xyz x myself,master - 0 0 1 connected\n", -1, 0, 0 },
		{ ID_A " x myself,master abc 0 0 1 connected\n", -1, 0, 0 },
		{ ID_A "  x myself,master - 0 0 1 connected\n", -1, 0, 0 },
		{ "", -1, 0, 0 },
		/* A node that names itself its master. */
		{ ID_A " x myself,slave " ID_A " 0 0 1 connected\n", -1, 0, 0 },
		/* "myselfish" is no myself. */
		{ ID_A " x myselfish,master - 0 0 1 connected\n", -1, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cluster_replicas c;

		unit_context("cluster nodes %zu", i);
		CHECK_INT(rl_decode_cluster_nodes(t[i].text, strlen(t[i].text),
						  &c), t[i].rc);
		if (t[i].rc == 0) {
			CHECK_INT(c.known, t[i].known);
			CHECK_INT(c.failing, t[i].failing);
		}
	}
	unit_context(NULL);
}

void test_doctor(void)
{
	test_identify();
	test_info_fields();
	test_info_bounds();
	test_info_seconds();
	test_info_replicas();
	test_version();
	test_failover_plan();
	test_failover_message();
	test_decode_sentinel_master();
	test_decode_config();
	test_decode_cluster_nodes();
}
