/*
 * doctor_int.h - the parts of doctor that read what a server said, with
 * no connection: private to the library and its unit tests.
 */
#ifndef DOCTOR_INT_H
#define DOCTOR_INT_H

#include <stddef.h>

/* ---- INFO's text (info.c) ----------------------------------------------- */

/*
 * The decoder's bounds.  Redis 7's default INFO has about 200 fields and
 * INFO everything some 400 more (one per command and error seen): 1024
 * fields hold every real reply.  A line is "key:value", the key 1..64
 * bytes of printable ASCII without space (Redis writes [a-z0-9_|]); 8192
 * bytes hold the longest value Redis writes (a path, a module's line).
 */
#define INFO_FIELDS_MAX 1024
#define INFO_KEY_MAX 64
#define INFO_LINE_MAX 8192

struct info_field {
	const char *key, *val;		/* into the text, not terminated */
	size_t klen, vlen;
	int over;			/* the line was longer than
					 * INFO_LINE_MAX: vlen is cut */
};

/* The fields of one INFO text, in its order; the text stays the caller's. */
struct info {
	const char *text;
	size_t len;
	size_t n;
	size_t junk;			/* lines skipped: no ':', a bad key */
	int full;			/* more fields than the table holds */
	struct info_field f[INFO_FIELDS_MAX];
};

/* What a getter found. */
enum {
	INFO_BAD = -1,		/* present, but does not read: said twice, a
				 * line too long, not a number in range, or
				 * not found in a table that overflowed */
	INFO_ABSENT = 0,
	INFO_OK = 1,
};

/*
 * Split len bytes of INFO's text (no terminator needed; embedded NULs are
 * bytes like others) into in: lines end at "\n", a "\r" before it is
 * dropped, the last line needs no end; blank lines and "# Section" lines
 * are skipped; a line with no ':' or a bad key counts in junk.  Never
 * fails: what does not fit is remembered (over, full), and the getters
 * say INFO_BAD for it.
 */
void info_parse(struct info *in, const char *text, size_t len);

/*
 * The field called key, in *v (n bytes, not terminated; "" when absent).
 * in may be NULL (INFO refused): absent.  Returns INFO_OK, INFO_ABSENT or
 * INFO_BAD.
 */
int info_get(const struct info *in, const char *key, const char **v,
	     size_t *n);

/* The field as a whole number in min..max (rlock_parse_ll).  Returns
 * INFO_OK with *v set, INFO_ABSENT, or INFO_BAD. */
int info_num(const struct info *in, const char *key, long long min,
	     long long max, long long *v);

/* The field's bytes, cut to fit buf (a NUL byte ends them; "" when
 * absent), also when it is INFO_BAD, for the message that says so: raw,
 * the cli escapes them where they are shown.  Returns what info_get
 * returns. */
int info_text(const struct info *in, const char *key, char *buf, size_t len);

/* A field of seconds with up to six decimals ("1.234567", as used_cpu_sys)
 * in microseconds.  Returns INFO_OK with *us set, INFO_ABSENT or INFO_BAD. */
int info_seconds(const struct info *in, const char *key, long long *us);

/* One replica, from a "slaveN:" line. */
struct info_replica {
	int online;			/* state=online */
	long long lag;			/* seconds; -1 when not said (2.6) */
};

/*
 * The next "slaveN:" line from field *pos on (start at 0), whatever N and
 * however many connected_slaves claims: "ip=..,port=..,state=S,...,lag=L"
 * or Redis 2.6's "ip,port,state".  Returns INFO_OK with *r filled,
 * INFO_BAD for a line that does not decode (no state, a lag that is not
 * a number, an item said twice), INFO_ABSENT after the last; *pos moves
 * past the line returned.
 */
int info_replica(const struct info *in, size_t *pos, struct info_replica *r);

/* ---- what the server is (doctor.c) -------------------------------------- */

/* What a server is, in its own words. */
struct server_id {
	char product[16];	/* "redis", "valkey": lower case, as said */
	char title[16];		/* "Redis", "Valkey": for messages */
	char version[32];	/* the product's own version */
	char compat[32];	/* the Redis version whose features it has */
};

/*
 * Tell which server this is, and its version, from INFO's fields (NULL
 * when INFO was refused) and HELLO's "server" and "version" fields ("" when
 * HELLO was not answered).  Valkey keeps Redis's fields for the Redis
 * version it is compatible with (INFO's redis_version is 7.2.4; from 8.0
 * HELLO too says "redis" and 7.2.4 when extended-redis-compatibility is
 * on) and names itself in INFO's server_name and valkey_version, and in
 * HELLO from 8.0 (7.2.x said "redis" there with its own version).  So
 * INFO's server_name and <server_name>_version come first, then HELLO,
 * then redis_version.  Returns 0, or -1 when no version is known (id's
 * version is then "").
 */
int server_identify(const struct info *info, const char *hello_server,
		    const char *hello_version, struct server_id *id);

/* A version "MAJOR.MINOR.PATCH", each part 0..65535 and nothing else.
 * Returns 0 with the parts set, or -1. */
int parse_version(const char *v, int *maj, int *min, int *pat);

#endif /* DOCTOR_INT_H */
