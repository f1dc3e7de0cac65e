/*
 * harness.h - a tiny test harness for librlock's unit tests.  A failed
 * check prints where and what, then the test goes on, so one run shows
 * every failure.  main.c counts the results and prints the summary.
 */
#ifndef UNIT_HARNESS_H
#define UNIT_HARNESS_H

#include <stddef.h>

extern long unit_passed, unit_failed;

void unit_check(int ok, const char *file, int line, const char *expr);
void unit_check_int(long long got, long long want, const char *file,
		    int line, const char *expr);
void unit_check_str(const char *got, const char *want, const char *file,
		    int line, const char *expr);
void unit_check_mem(const void *got, size_t gotlen, const void *want,
		    size_t wantlen, const char *file, int line,
		    const char *expr);

/* Extra context for the next failure message, e.g. the input under
 * test when the check sits in a loop over a table.  NULL clears it. */
void unit_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_INT(got, want) \
	unit_check_int((long long)(got), (long long)(want), __FILE__, \
		       __LINE__, #got " == " #want)
/* Either side may be NULL; two NULLs are equal. */
#define CHECK_STR(got, want) \
	unit_check_str((got), (want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_MEM(got, gotlen, want, wantlen) \
	unit_check_mem((got), (gotlen), (want), (wantlen), __FILE__, \
		       __LINE__, #got " == " #want)

/* A RESP2 reply parsed from its bytes (freeReplyObject it), or NULL. */
struct redisReply *unit_reply(const char *resp);

/* The groups, one per file. */
void test_duration(void);
void test_url(void);
void test_token(void);
void test_name(void);
void test_util(void);
void test_resp(void);
void test_sha1(void);
void test_scripts(void);
void test_script_errors(void);
void test_decoders(void);
void test_no_scripts(void);
void test_slots(void);
void test_fanout(void);
void test_doctor(void);

#endif /* UNIT_HARNESS_H */
