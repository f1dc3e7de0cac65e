/*
 * test_doctor.c - what doctor's version line calls a server, from what
 * its INFO and HELLO said.  The Redis sample is INFO's Server section from
 * redis-server 7.0.15; the Valkey ones follow genValkeyInfoString and
 * helloCommand in Valkey's src/server.c and src/networking.c (7.2.7,
 * 8.0.1, and an unstable build, whose version is 255.255.255).
 */
#include <string.h>

#include "doctor_int.h"
#include "harness.h"

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

void test_doctor(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct server_id id;
		int rc;

		unit_context("%s", cases[i].what);
		memset(&id, 'Z', sizeof(id));
		rc = server_identify(cases[i].info, cases[i].hello_server,
				     cases[i].hello_version, &id);
		CHECK_INT(rc, cases[i].rc);
		CHECK_STR(id.product, cases[i].product);
		CHECK_STR(id.title, cases[i].title);
		CHECK_STR(id.version, cases[i].version);
		CHECK_STR(id.compat, cases[i].compat);
	}
	unit_context(NULL);
}
