/*
 * main.c - run librlock's unit test groups and summarise.  With arguments,
 * only the named groups run ("unit url resp").  The last line is always
 * "unit: N passed, N failed" and the exit status is 1 when any check
 * failed, so make, CI and valgrind --error-exitcode all see it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "harness.h"

long unit_passed, unit_failed;

static char context[512];

static const struct group {
	const char *name;
	void (*fn)(void);
} groups[] = {
	{ "duration", test_duration },
	{ "url", test_url },
	{ "token", test_token },
	{ "name", test_name },
	{ "util", test_util },
	{ "resp", test_resp },
	{ "sha1", test_sha1 },
	{ "scripts", test_scripts },
	{ "scripterrors", test_script_errors },
	{ "decoders", test_decoders },
	{ "noscripts", test_no_scripts },
	{ "slots", test_slots },
	{ "fanout", test_fanout },
	{ "doctor", test_doctor },
};

#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

void unit_context(const char *fmt, ...)
{
	va_list ap;

	if (fmt == NULL) {
		context[0] = '\0';
		return;
	}
	va_start(ap, fmt);
	vsnprintf(context, sizeof(context), fmt, ap);
	va_end(ap);
}

static void fail_head(const char *file, int line, const char *expr)
{
	unit_failed++;
	printf("  FAIL %s:%d: %s", file, line, expr);
	if (context[0] != '\0')
		printf(" [%s]", context);
	printf("\n");
}

void unit_check(int ok, const char *file, int line, const char *expr)
{
	if (ok) {
		unit_passed++;
		return;
	}
	fail_head(file, line, expr);
}

void unit_check_int(long long got, long long want, const char *file,
		    int line, const char *expr)
{
	if (got == want) {
		unit_passed++;
		return;
	}
	fail_head(file, line, expr);
	printf("       got %lld, want %lld\n", got, want);
}

void unit_check_str(const char *got, const char *want, const char *file,
		    int line, const char *expr)
{
	if ((got == NULL && want == NULL) ||
	    (got != NULL && want != NULL && strcmp(got, want) == 0)) {
		unit_passed++;
		return;
	}
	fail_head(file, line, expr);
	printf("       got %s%s%s, want %s%s%s\n", got ? "'" : "",
	       got ? got : "NULL", got ? "'" : "", want ? "'" : "",
	       want ? want : "NULL", want ? "'" : "");
}

void unit_check_mem(const void *got, size_t gotlen, const void *want,
		    size_t wantlen, const char *file, int line,
		    const char *expr)
{
	if (gotlen == wantlen &&
	    (gotlen == 0 || (got != NULL && memcmp(got, want, gotlen) == 0))) {
		unit_passed++;
		return;
	}
	fail_head(file, line, expr);
	printf("       got %zu bytes, want %zu bytes\n", gotlen, wantlen);
}

static int wanted(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;
	int i_arg;

	for (i_arg = 1; i_arg < argc; i_arg++) {
		int known = 0;

		for (i = 0; i < NGROUPS; i++)
			if (strcmp(argv[i_arg], groups[i].name) == 0)
				known = 1;
		if (!known) {
			fprintf(stderr, "unit: no test group '%s'\n",
				argv[i_arg]);
			return 2;
		}
	}

	for (i = 0; i < NGROUPS; i++) {
		long p0 = unit_passed, f0 = unit_failed;

		if (!wanted(groups[i].name, argc, argv))
			continue;
		unit_context(NULL);
		groups[i].fn();
		if (unit_failed == f0)
			printf("ok - %s (%ld checks)\n", groups[i].name,
			       unit_passed - p0);
		else
			printf("not ok - %s (%ld of %ld checks failed)\n",
			       groups[i].name, unit_failed - f0,
			       unit_passed - p0 + unit_failed - f0);
		fflush(stdout);
	}
	printf("unit: %ld passed, %ld failed\n", unit_passed, unit_failed);
	return unit_failed == 0 ? 0 : 1;
}

struct redisReply *unit_reply(const char *resp)
{
	redisReader *rd = redisReaderCreate();
	void *r = NULL;

	if (rd == NULL)
		return NULL;
	if (redisReaderFeed(rd, resp, strlen(resp)) != REDIS_OK ||
	    redisReaderGetReply(rd, &r) != REDIS_OK)
		r = NULL;
	redisReaderFree(rd);
	return r;
}
