/*
 * test_scripts.c - every Lua script's digest, computed by the build
 * (lib/scripts/luagen.c), is the SHA-1 of its body: EVALSHA would
 * otherwise always miss and pay a NOSCRIPT and an EVAL.  Each line of a
 * body maps to the line of lib/scripts/ it came from, and a server's
 * error names that line.  The error replies of a server that cannot run
 * scripts, told from every other.  And the cluster slot of a key, which
 * must be the server's or every request would be redirected.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "keys.h"
#include "request.h"

/* Line n (1 the first) of file in lib/scripts/, without its newline, into
 * buf; "" when there is no such line.  The tests run from the top of the
 * tree. */
static void source_line(const char *file, unsigned long n, char *buf,
			size_t len)
{
	char path[256];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "lib/scripts/%s", file);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	while (n-- > 0 && fgets(buf, (int)len, f) != NULL)
		;
	if (n != (unsigned long)-1)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

void test_scripts(void)
{
	char hex[41];

	for (int i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
		const struct rlock_script *s = &rlock_scripts[i];
		const char *p, *nl, *file;
		unsigned long line = 0, src;
		char want[1024];

		unit_context("script %s", s->name);
		CHECK(s->body != NULL && s->sha != NULL);
		rl_sha1_hex(s->body, strlen(s->body), hex);
		CHECK_STR(s->sha, hex);
		/* Each line is its source's, up to the first @NAME@ there
		 * (the build wrote the value in its place); the first that
		 * is not is the one reported. */
		for (p = s->body; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
			size_t n;

			line++;
			if (rl_script_source(s, line, &file, &src) != 0)
				break;
			source_line(file, src, want, sizeof(want));
			n = strcspn(want, "@");
			if (want[0] == '\0' || memcmp(p, want, n) != 0 ||
			    (want[n] == '\0' && (size_t)(nl - p) != n))
				break;
		}
		unit_context("script %s line %lu", s->name, line);
		CHECK(nl == NULL);
		if (nl != NULL)
			CHECK_MEM(p, (size_t)(nl - p), want, strlen(want));
		unit_context("script %s", s->name);
		CHECK(rl_script_source(s, line + 1, &file, &src) != 0);
		CHECK(rl_script_source(s, 0, &file, &src) != 0);
	}
	unit_context(NULL);
}

/* The line of script id's body that holds what, and where it comes from
 * as "FILE:LINE". */
static unsigned long body_line(int id, const char *what, char *where,
			       size_t len)
{
	const struct rlock_script *s = &rlock_scripts[id];
	const char *at = strstr(s->body, what), *file;
	unsigned long line = 1, src;

	for (const char *p = s->body; at != NULL && p < at; p++)
		line += *p == '\n';
	if (at == NULL || rl_script_source(s, line, &file, &src) != 0)
		return 0;
	snprintf(where, len, "%s:%lu", file, src);
	return line;
}

/* Error replies as Redis 7.0.15 and 6.0 write them, for a line of extend
 * (a PEXPIREAT it refused: redis.call raised the error) and of release. */
void test_script_errors(void)
{
	const char *ext = rlock_scripts[RLOCK_SCRIPT_EXTEND].sha;
	const char *rel = rlock_scripts[RLOCK_SCRIPT_RELEASE].sha;
	char in[512], want[512], got[512], we[64], wr[64];
	unsigned long le = body_line(RLOCK_SCRIPT_EXTEND, "'PEXPIREAT'", we,
				     sizeof(we));
	unsigned long lr = body_line(RLOCK_SCRIPT_RELEASE, "tonumber(hu) >",
				     wr, sizeof(wr));

	CHECK(le > 0 && lr > 0);
	CHECK(strncmp(we, "extend.lua:", 11) == 0);
	CHECK(strncmp(wr, "release.lua:", 12) == 0);

	/* Redis 7: a Lua error names the line in the text and the tail. */
	snprintf(in, sizeof(in), "ERR user_script:%lu: attempt to compare "
		 "number with nil script: %s, on @user_script:%lu.", lr, rel,
		 lr);
	snprintf(want, sizeof(want), "ERR %s: attempt to compare number "
		 "with nil", wr);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, want);

	/* Redis 7: one redis.call raised names it in the tail only. */
	snprintf(in, sizeof(in), "ERR value is not an integer or out of "
		 "range script: %s, on @user_script:%lu.", ext, le);
	snprintf(want, sizeof(want), "ERR value is not an integer or out of "
		 "range (%s)", we);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, want);

	/* A state of the server that a redis.call met is no line's doing. */
	snprintf(in, sizeof(in), "NOREPLICAS Not enough good replicas to "
		 "write. script: %s, on @user_script:%lu.", ext, le);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, "NOREPLICAS Not enough good replicas to write.");

	/* Redis 6: the digest in the function's name, the line twice. */
	snprintf(in, sizeof(in), "ERR Error running script (call to f_%s): "
		 "@user_script:%lu: user_script:%lu: attempt to compare "
		 "number with nil", rel, lr, lr);
	snprintf(want, sizeof(want), "ERR Error running script (call to "
		 "f_%s): @%s: %s: attempt to compare number with nil", rel,
		 wr, wr);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, want);

	/* Not rlock's script, or no line its body has: as it came. */
	snprintf(in, sizeof(in), "ERR user_script:3: boom script: "
		 "%040d, on @user_script:3.", 0);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, "ERR user_script:3: boom");
	snprintf(in, sizeof(in), "ERR user_script:99999: boom script: %s, "
		 "on @user_script:99999.", ext);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, "ERR user_script:99999: boom");
	snprintf(in, sizeof(in), "ERR user_script:: boom script: %s, on "
		 "@user_script:x.", ext);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, "ERR user_script:: boom");
	rl_script_error_text("ERR unknown command 'X'", 23, got, sizeof(got));
	CHECK_STR(got, "ERR unknown command 'X'");

	/* Valkey's words for an ACL refusal say "script: " themselves: the
	 * tail is the last, with a digest, and the words stay whole. */
	snprintf(in, sizeof(in), "ERR ACL failure in script: User nolog has "
		 "no permissions to run the 'xadd' command script: %s, on "
		 "@user_script:%lu.", ext, le);
	CHECK(rl_script_tail(in, strlen(in)) == strstr(in, " command") + 8);
	snprintf(want, sizeof(want), "ERR ACL failure in script: User nolog "
		 "has no permissions to run the 'xadd' command (%s)", we);
	rl_script_error_text(in, strlen(in), got, sizeof(got));
	CHECK_STR(got, want);
	CHECK(rl_script_tail("ERR ACL failure in script: User x", 32) == NULL);
	CHECK(rl_script_tail("ERR x script: 0123", 18) == NULL);

	/* Cut to the room there is. */
	snprintf(in, sizeof(in), "ERR user_script:%lu: attempt to compare "
		 "script: %s, on @user_script:%lu.", lr, rel, lr);
	memset(got, 'z', sizeof(got));
	rl_script_error_text(in, strlen(in), got, 8);
	CHECK_STR(got, "ERR rel");
	rl_script_error_text(in, strlen(in), got, 1);
	CHECK_STR(got, "");
}

/* Redis 7.0.15 with EVAL or EVALSHA renamed to "" (Redis 6.0 and older
 * quote with `), Valkey's src/eval.c without a Lua engine, and replies
 * that mean something else. */
#define NO(why) "cannot run Lua scripts (" why "): rlock needs EVAL and EVALSHA"

static const struct {
	int type;
	const char *str, *why;
} no_scripts[] = {
	{ REDIS_REPLY_ERROR, "ERR unknown command 'EVALSHA', with args "
	  "beginning with: 'b338a9fac870315d52beabdf59df87087fe24894' '7' ",
	  NO("EVALSHA is an unknown command") },
	{ REDIS_REPLY_ERROR, "ERR unknown command 'EVAL', with args "
	  "beginning with: 'local t = redis.call' '2' ",
	  NO("EVAL is an unknown command") },
	{ REDIS_REPLY_ERROR, "ERR unknown command `EVALSHA`, with args "
	  "beginning with: `b338a9fac870315d52beabdf59df87087fe24894`, ",
	  NO("EVALSHA is an unknown command") },
	{ REDIS_REPLY_ERROR, "ERR unknown command 'evalsha', with args "
	  "beginning with: ", NO("EVALSHA is an unknown command") },
	{ REDIS_REPLY_ERROR, "ERR Could not find scripting engine 'lua'",
	  NO("no Lua engine is loaded") },
	{ REDIS_REPLY_ERROR, "ERR unknown command 'EVALSHA_RO', with args "
	  "beginning with: ", NULL },
	{ REDIS_REPLY_ERROR, "ERR unknown command 'SCAN', with args "
	  "beginning with: '0' ", NULL },
	{ REDIS_REPLY_ERROR, "ERR unknown command 'EVAL", NULL },
	{ REDIS_REPLY_ERROR, "NOSCRIPT No matching script. Please use EVAL.",
	  NULL },
	{ REDIS_REPLY_ERROR, "NOPERM User app has no permissions to run the "
	  "'evalsha' command", NULL },
	{ REDIS_REPLY_ERROR, "ERR Error running script (call to "
	  "f_0123): @user_script:1: Script attempted to access nonexistent "
	  "global variable 'x'", NULL },
	{ REDIS_REPLY_STATUS, "ERR Could not find scripting engine 'lua'",
	  NULL },
};

void test_no_scripts(void)
{
	for (size_t i = 0; i < sizeof(no_scripts) / sizeof(no_scripts[0]);
	     i++) {
		redisReply r;
		char why[128] = "";
		int got;

		unit_context("%s", no_scripts[i].str);
		memset(&r, 0, sizeof(r));
		r.type = no_scripts[i].type;
		r.str = (char *)no_scripts[i].str;
		r.len = strlen(r.str);
		got = rl_scripts_unavailable(&r, why, sizeof(why));
		CHECK_INT(got, no_scripts[i].why != NULL);
		if (no_scripts[i].why != NULL)
			CHECK_STR(why, no_scripts[i].why);
	}
	unit_context(NULL);
}

static int slot_of(const char *key)
{
	return rl_key_slot(key, strlen(key));
}

/* The examples of the Redis Cluster specification, and CLUSTER KEYSLOT's
 * answers on Redis 7.0.15 for rlock's own keys. */
void test_slots(void)
{
	CHECK_INT(slot_of("123456789"), 0x31c3 % 16384);
	CHECK_INT(slot_of("foo"), 12182);
	CHECK_INT(slot_of("{user1000}.following"), slot_of("user1000"));
	CHECK_INT(slot_of("{user1000}.followers"), slot_of("user1000"));
	/* An empty tag: the whole key. */
	CHECK_INT(slot_of("foo{}{bar}"), 8363);
	/* The tag ends at the first '}' after the first '{'. */
	CHECK_INT(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	CHECK_INT(slot_of("foo{bar}{zap}"), slot_of("bar"));
	CHECK_INT(slot_of("foo{"), slot_of("foo{"));
	/* Every key of a lock, and its channel, in one slot. */
	CHECK_INT(slot_of("rlock:{job}"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}:owner"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}:released"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}"), 2906);
	CHECK_INT(slot_of(""), 0);
}
