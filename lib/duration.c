/*
 * duration.c - parse the DUR arguments of the command line ("1.5", "500ms",
 * "30s", "5m", "2h", "1h30m") into milliseconds.
 *
 * The parsing is done by hand rather than with strtod: strtod follows the
 * locale's decimal point, accepts signs, spaces, exponents, hex, "inf" and
 * "nan", and rounds through binary floating point.  Here the value is
 * computed exactly from its decimal digits.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>


/* 100 years (36525 days): anything longer is a typo, not a lease. */
#define DURATION_MAX_MS (36525LL * 24 * 3600 * 1000)

struct unit {
	const char *suffix;
	int64_t ms;
};

/* Longest suffix first where one is the start of another ("ms", "m"); a
 * compound duration names its units in this order, largest first. */
static const struct unit units[] = {
	{ "d", 24 * 3600 * 1000 },
	{ "h", 3600 * 1000 },
	{ "ms", 1 },
	{ "m", 60 * 1000 },
	{ "s", 1000 },
};

#define NUNITS (sizeof(units) / sizeof(units[0]))

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

/* The unit whose suffix p starts with, or NUNITS. */
static size_t unit_at(const char *p)
{
	size_t i;

	for (i = 0; i < NUNITS; i++)
		if (strncmp(p, units[i].suffix, strlen(units[i].suffix)) == 0)
			return i;
	return NUNITS;
}

/* The units' rank from largest to smallest: "ms" sits before "m" in the
 * table only so that it is matched first. */
static int rank(size_t i)
{
	static const int ranks[] = { 0, 1, 4, 2, 3 };

	return ranks[i];
}

int rlock_parse_duration(const char *s, int64_t *ms)
{
	const char *p = s;
	int64_t total = 0;
	int nonzero = 0, last_rank = -1, parts = 0;

	if (s == NULL || ms == NULL)
		return -1;

	/* One part or more, each DIGITS[.DIGITS]UNIT, the units largest
	 * first and each at most once ("1h30m", "1m30s"); only the last
	 * part may have a fraction; a bare number (seconds) stands alone. */
	while (*p != '\0') {
		const char *frac = NULL;
		size_t nint = 0, nfrac = 0, u;
		int64_t whole = 0;

		/* Integer part: digits only, no sign, no leading space. */
		for (; is_digit(*p); p++, nint++) {
			/* Stop accumulating long before int64_t could
			 * overflow; the range check rejects such a value
			 * anyway. */
			if (whole <= DURATION_MAX_MS)
				whole = whole * 10 + (*p - '0');
			if (*p != '0')
				nonzero = 1;
		}
		/* Fraction: a point must be followed by at least one digit,
		 * so "5." and "." are malformed while ".5" is half a
		 * second. */
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
		parts++;

		if (*p == '\0' && parts == 1) {
			u = NUNITS;	/* a bare number: seconds, as flock -w */
		} else {
			/* "5sec", "5 s", "5S", "5m5" and "30m1h" fail
			 * here. */
			u = unit_at(p);
			if (u == NUNITS || rank(u) <= last_rank)
				return -1;
			last_rank = rank(u);
			p += strlen(units[u].suffix);
			if (frac != NULL && *p != '\0')
				return -1;
		}

		{
			int64_t mult = u == NUNITS ? 1000 : units[u].ms;

			if (whole > DURATION_MAX_MS / mult)
				return -1;
			total += whole * mult;
			if (frac != NULL)
				total += frac_times(frac, nfrac, mult);
			if (total > DURATION_MAX_MS)
				return -1;
		}
	}
	if (parts == 0)
		return -1;
	/* "0.5ms" would silently become zero, which callers take as "no
	 * wait" or reject as a TTL; neither is what the user wrote. */
	if (nonzero && total == 0)
		return -1;
	*ms = total;
	return 0;
}
