/*
 * fuzz_duration.c - rlock_parse_duration (lib/duration.c) on the input as
 * a C string.
 *
 * Beyond not crashing: an accepted duration is in 0..100 years of
 * milliseconds, zero only when all its digits are; the input matches
 * DIGITS[.DIGITS] alone or parts DIGITS[.DIGITS](d|h|m|s|ms), largest unit
 * first, each once, a fraction only last, and nothing else; and the value
 * is the one
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

/* One part "DIGITS[.DIGITS]" of s, in milliseconds at mult, floor'd: -2
 * when its fraction has too many digits for this reckoning, and more than
 * MAX_MS for an integer part of more than 20 digits. */
static __int128 part_ms(const char *i0, size_t ni, const char *f0, size_t nf,
			int64_t mult)
{
	__int128 whole = 0, frac = 0, pow = 1;
	size_t k;

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

/* The milliseconds s stands for, floor'd: -1 when it breaks the grammar
 * (a bare number alone, or parts NUMBER UNIT with units among d, h, m, s,
 * ms, strictly largest first, a fraction in the last part only), -2 when
 * a fraction has too many digits for this reckoning, and more than MAX_MS
 * for an integer part of more than 20 digits. */
static __int128 reference(const char *s, int *grammar_ok)
{
	/* Largest first: a part's unit must come later in this list than
	 * the one before it. */
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 },
		      { "s", 1000 }, { "ms", 1 } };
	const char *p = s;
	__int128 sum = 0, v;
	int next = 0, parts = 0, toolong = 0;

	*grammar_ok = 0;
	while (*p != '\0') {
		const char *i0 = p, *f0 = NULL;
		size_t ni = 0, nf = 0, len = 0;
		int k, found = -1;

		for (; is_digit(*p); p++, ni++)
			;
		if (*p == '.') {
			f0 = ++p;
			for (; is_digit(*p); p++, nf++)
				;
		}
		if ((ni == 0 && nf == 0) || (f0 != NULL && nf == 0))
			return -1;
		if (*p == '\0' && parts == 0) {
			/* A bare number: seconds. */
			v = part_ms(i0, ni, f0, nf, 1000);
			parts++;
			if (v == -2)
				toolong = 1;
			else
				sum += v;
			break;
		}
		parts++;
		/* The longest unit spelt here: "ms" before "m". */
		for (k = 0; k < 5; k++) {
			size_t l = strlen(units[k].suffix);

			if (strncmp(p, units[k].suffix, l) == 0 && l > len) {
				found = k;
				len = l;
			}
		}
		if (found < next)
			return -1;
		p += len;
		if (f0 != NULL && *p != '\0')
			return -1;
		next = found + 1;
		v = part_ms(i0, ni, f0, nf, units[found].ms);
		if (v == -2)
			toolong = 1;
		else
			sum += v;
	}
	if (parts == 0)
		return -1;
	*grammar_ok = 1;
	return toolong ? -2 : sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	int64_t ms = UNSET;
	int grammar_ok, any_nonzero = 0;
	__int128 want = reference(s, &grammar_ok);
	int rc = rlock_parse_duration(s, &ms);

	/* Every digit of the string is a number's: units have none. */
	for (const char *p = s; *p != '\0'; p++)
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
