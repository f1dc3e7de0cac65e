/*
 * duration.c - parse the DUR arguments of the command line ("1.5", "500ms",
 * "30s", "5m", "2h") into milliseconds.
 *
 * The parsing is done by hand rather than with strtod: strtod follows the
 * locale's decimal point, accepts signs, spaces, exponents, hex, "inf" and
 * "nan", and rounds through binary floating point.  Here the value is
 * computed exactly from its decimal digits.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rlock_int.h"

/* 100 years (36525 days): anything longer is a typo, not a lease. */
#define DURATION_MAX_MS (36525LL * 24 * 3600 * 1000)

struct unit {
	const char *suffix;
	int64_t ms;
};

static const struct unit units[] = {
	{ "", 1000 },		/* bare number: seconds, like flock -w */
	{ "ms", 1 },
	{ "s", 1000 },
	{ "m", 60 * 1000 },
	{ "h", 3600 * 1000 },
	{ "d", 24 * 3600 * 1000 },
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * floor(0.<digits> * mult) for the n fraction digits at frac, exactly:
 * multiply the decimal fraction by mult from its last digit to its first,
 * carrying; what carries out past the decimal point is the integer part.
 * The carry never exceeds mult, so nothing can overflow however many
 * digits there are.
 */
static int64_t frac_times(const char *frac, size_t n, int64_t mult)
{
	int64_t carry = 0;
	size_t i;

	for (i = n; i > 0; i--)
		carry = ((frac[i - 1] - '0') * mult + carry) / 10;
	return carry;
}

int rlock_parse_duration(const char *s, int64_t *ms)
{
	const char *p = s, *frac = NULL;
	size_t nint = 0, nfrac = 0, i;
	int64_t whole = 0, total;
	const struct unit *u = NULL;
	int nonzero = 0;

	if (s == NULL || ms == NULL)
		return -1;

	/* Integer part: digits only, no sign, no leading space. */
	for (; is_digit(*p); p++, nint++) {
		/* Stop accumulating long before int64_t could overflow; the
		 * range check below rejects such a value anyway. */
		if (whole <= DURATION_MAX_MS)
			whole = whole * 10 + (*p - '0');
		if (*p != '0')
			nonzero = 1;
	}
	/* Fraction: a point must be followed by at least one digit, so
	 * "5." and "." are malformed while ".5" is half a second. */
	if (*p == '.') {
		p++;
		frac = p;
		for (; is_digit(*p); p++, nfrac++)
			if (*p != '0')
				nonzero = 1;
		if (nfrac == 0)
			return -1;
	}
	if (nint == 0 && nfrac == 0)
		return -1;

	/* The unit is the whole rest of the string: "5sec", "5 s", "5S"
	 * and "1h30m" all fail here. */
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) == 0) {
			u = &units[i];
			break;
		}
	}
	if (u == NULL)
		return -1;

	if (whole > DURATION_MAX_MS / u->ms)
		return -1;
	total = whole * u->ms;
	if (frac != NULL)
		total += frac_times(frac, nfrac, u->ms);
	if (total > DURATION_MAX_MS)
		return -1;
	/* "0.5ms" would silently become zero, which callers take as "no
	 * wait" or reject as a TTL; neither is what the user wrote. */
	if (nonzero && total == 0)
		return -1;
	*ms = total;
	return 0;
}
