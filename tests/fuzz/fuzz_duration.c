/*
 * fuzz_duration.c - rlock_parse_duration (lib/duration.c) on the input as
 * a C string.
 *
 * Beyond not crashing: an accepted duration is in 0..100 years of
 * milliseconds, zero only when all its digits are; the input matches
 * DIGITS[.DIGITS][ms|s|m|h|d] and nothing else; and the value is the one
 * computed here independently, exactly, in 128-bit arithmetic, whenever
 * the digits fit it.  A refused one leaves *ms alone.
 */
#include "fuzz.h"
#include "rlock.h"

#define MAX_MS (36525LL * 24 * 3600 * 1000)
#define UNSET (-424242)

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The milliseconds s stands for, floor'd: -1 when it breaks the grammar,
 * -2 when its fraction has too many digits for this reckoning, and more
 * than MAX_MS for an integer part of more than 20 digits. */
static __int128 reference(const char *s, int *grammar_ok)
{
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = { { "", 1000 }, { "ms", 1 }, { "s", 1000 },
		      { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
	const char *p = s, *i0, *f0 = NULL;
	size_t ni = 0, nf = 0, k;
	__int128 whole = 0, frac = 0, pow = 1;
	int64_t mult = -1;

	for (i0 = p; is_digit(*p); p++, ni++)
		;
	if (*p == '.') {
		f0 = ++p;
		for (; is_digit(*p); p++, nf++)
			;
	}
	*grammar_ok = 0;
	if ((ni == 0 && nf == 0) || (f0 != NULL && nf == 0))
		return -1;
	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (strcmp(p, units[k].suffix) == 0)
			mult = units[k].ms;
	if (mult < 0)
		return -1;
	*grammar_ok = 1;

	/* Leading zeros of the integer part and trailing zeros of the
	 * fraction change nothing; what is left must fit. */
	while (ni > 0 && *i0 == '0')
		i0++, ni--;
	while (nf > 0 && f0[nf - 1] == '0')
		nf--;
	if (ni > 20)
		return (__int128)MAX_MS + 1;
	if (nf > 29)
		return -2;
	for (k = 0; k < ni; k++)
		whole = whole * 10 + (i0[k] - '0');
	for (k = 0; k < nf; k++) {
		frac = frac * 10 + (f0[k] - '0');
		pow *= 10;
	}
	return whole * mult + frac * mult / pow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	int64_t ms = UNSET;
	int grammar_ok, any_nonzero = 0;
	__int128 want = reference(s, &grammar_ok);
	int rc = rlock_parse_duration(s, &ms);

	for (const char *p = s; *p != '\0' && (is_digit(*p) || *p == '.'); p++)
		if (*p >= '1' && *p <= '9')
			any_nonzero = 1;
	REQUIRE(rc == 0 || rc == -1);
	if (rc != 0) {
		REQUIRE(ms == UNSET);
		/* Refused only for the grammar, the range, or a value below
		 * one millisecond. */
		if (grammar_ok && want >= 0)
			REQUIRE(want > MAX_MS || (want == 0 && any_nonzero));
		free(s);
		return 0;
	}
	REQUIRE(grammar_ok);
	REQUIRE(ms >= 0 && ms <= MAX_MS);
	REQUIRE((ms == 0) == !any_nonzero);
	if (want >= 0)
		REQUIRE(ms == (int64_t)want);
	free(s);
	return 0;
}
