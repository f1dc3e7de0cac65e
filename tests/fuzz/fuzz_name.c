/*
 * fuzz_name.c - rlock_check_name and rlock_check_note (lib/util.c) on the
 * input as a C string, and on its first RLOCK_NAME_MAX + 1 and
 * RLOCK_NOTE_MAX + 1 bytes with no terminator at all.
 *
 * Beyond not crashing: the verdict is the rule written out here (a name
 * is 1..RLOCK_NAME_MAX bytes, a note 0..RLOCK_NOTE_MAX, neither with a
 * byte below 0x20 or DEL); a reason is given exactly when the answer is
 * RLOCK_EUSAGE; and neither function reads more than one byte past its
 * limit, which ASan sees in the unterminated copies.
 */
#include "fuzz.h"
#include "rlock.h"

/* The rule: RLOCK_OK or RLOCK_EUSAGE for the first n bytes of s (up to a
 * NUL), allowing min..max bytes. */
static int rule(const char *s, size_t n, size_t min, size_t max)
{
	size_t len = strnlen(s, n);

	if (len < min || len > max)
		return RLOCK_EUSAGE;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return RLOCK_EUSAGE;
	return RLOCK_OK;
}

static void verdict(int rc, int want, const char *why)
{
	REQUIRE(rc == want);
	REQUIRE((why == NULL) == (rc == RLOCK_OK));
	REQUIRE(why == NULL || why[0] != '\0');
}

/* A block of exactly limit + 1 bytes of the input (padded with 'a'), with
 * no terminator: a check that stops at limit + 1 reads none past it. */
static char *unterminated(const uint8_t *data, size_t size, size_t limit)
{
	char *b = malloc(limit + 1);
	size_t n = size < limit + 1 ? size : limit + 1;

	if (b == NULL)
		abort();
	memcpy(b, data, n);
	memset(b + n, 'a', limit + 1 - n);
	for (size_t i = 0; i < limit + 1; i++)
		if (b[i] == '\0')
			b[i] = 'a';
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size), *b;
	const char *why = "not set";
	size_t all = size + 1;

	verdict(rlock_check_name(s, &why), rule(s, all, 1, RLOCK_NAME_MAX),
		why);
	REQUIRE(rlock_check_name(s, NULL) == rule(s, all, 1, RLOCK_NAME_MAX));
	why = "not set";
	verdict(rlock_check_note(s, &why), rule(s, all, 0, RLOCK_NOTE_MAX),
		why);
	REQUIRE(rlock_check_note(s, NULL) == rule(s, all, 0, RLOCK_NOTE_MAX));
	free(s);

	/* Too long, whatever the bytes: the length is judged first. */
	b = unterminated(data, size, RLOCK_NAME_MAX);
	REQUIRE(rlock_check_name(b, NULL) == RLOCK_EUSAGE);
	free(b);
	b = unterminated(data, size, RLOCK_NOTE_MAX);
	REQUIRE(rlock_check_note(b, NULL) == RLOCK_EUSAGE);
	free(b);
	return 0;
}
