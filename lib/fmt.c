/*
 * fmt.c - durations written for people, the inverse of the parser's
 * units: whole units where exact, one decimal otherwise; and times of
 * the wall clock, in UTC.
 */
#include <stdio.h>
#include <time.h>

#include "rlock.h"

const char *rlock_fmt_ms(int64_t ms, char *buf, size_t len)
{
	const char *sign = "";

	if (ms < 0) {
		sign = "-";
		ms = -ms;
	}
	if (ms < 1000)
		snprintf(buf, len, "%s%lldms", sign, (long long)ms);
	else if (ms < 60000 && ms % 1000 == 0)
		snprintf(buf, len, "%s%llds", sign, (long long)(ms / 1000));
	else if (ms < 60000)
		snprintf(buf, len, "%s%.1fs", sign, (double)ms / 1000);
	else if (ms < 3600000 && ms % 60000 == 0)
		snprintf(buf, len, "%s%lldm", sign, (long long)(ms / 60000));
	else if (ms < 3600000)
		snprintf(buf, len, "%s%lldm%llds", sign,
			 (long long)(ms / 60000), (long long)(ms % 60000 / 1000));
	else
		snprintf(buf, len, "%s%lldh%lldm", sign,
			 (long long)(ms / 3600000),
			 (long long)(ms % 3600000 / 60000));
	return buf;
}

const char *rlock_fmt_utc(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, len, "%lld ms", ms);
	return buf;
}
