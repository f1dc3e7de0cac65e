/*
 * fuzz_info.c - INFO's text as doctor and bench read it (lib/info.c): the
 * input is the text, given with its length and no terminator, so that ASan
 * sees any read past it.  Each field the table holds is looked up by its
 * key, as a number, as text to show and as seconds; the fields doctor and
 * bench ask for by name too; then every slave line is walked.  The text,
 * terminated, is also read as a version (rl_parse_version).
 *
 * Beyond not crashing: the table holds at most INFO_FIELDS_MAX fields,
 * each a key of 1..INFO_KEY_MAX printable bytes with no ':' and a value
 * of at most INFO_LINE_MAX bytes with no newline, both inside the text; a
 * number read is in its range; text to show is terminated within its
 * buffer (raw: the cli's funnel escapes it); seconds are not negative; the walk
 * of slave lines ends within the table; a version's parts are 0..65535.
 */
#include <limits.h>

#include "doctor_int.h"
#include "fuzz.h"

static struct info in;

static const char *const named[] = {
	"connected_slaves", "used_memory", "maxmemory", "maxmemory_policy",
	"aof_enabled", "aof_last_write_status", "role", "server_name",
	"redis_version", "cluster_state", "cluster_slots_assigned",
	"used_cpu_sys", "used_cpu_user", "master_host", "master_port",
};

static void shown(const char *key)
{
	char buf[48];
	long long v, us;
	int rc;

	memset(buf, 'Z', sizeof(buf));
	rc = rl_info_text(&in, key, buf, sizeof(buf));
	REQUIRE(rc == INFO_OK || rc == INFO_ABSENT || rc == INFO_BAD);
	/* Raw bytes, terminated within the buffer: the cli escapes them
	 * where they are shown (fuzz_text checks that funnel). */
	REQUIRE(memchr(buf, '\0', sizeof(buf)) != NULL);
	if (rc == INFO_ABSENT)
		REQUIRE(buf[0] == '\0');
	if (rl_info_num(&in, key, 0, 1000000, &v) == INFO_OK)
		REQUIRE(v >= 0 && v <= 1000000);
	if (rl_info_num(&in, key, LLONG_MIN, LLONG_MAX, &v) == INFO_OK)
		REQUIRE(rc == INFO_OK);
	if (rl_info_seconds(&in, key, &us) == INFO_OK)
		REQUIRE(us >= 0 && rc == INFO_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct info_replica r;
	char *text = malloc(size > 0 ? size : 1), *s, key[INFO_KEY_MAX + 1];
	size_t pos = 0, walked = 0, last;
	int rc, maj, min, pat;

	if (text == NULL)
		abort();
	memcpy(text, data, size);
	rl_info_parse(&in, text, size);
	REQUIRE(in.n <= INFO_FIELDS_MAX);
	REQUIRE(!in.full || in.n == INFO_FIELDS_MAX);
	for (size_t i = 0; i < in.n; i++) {
		const struct info_field *f = &in.f[i];

		REQUIRE(f->klen >= 1 && f->klen <= INFO_KEY_MAX);
		REQUIRE(f->key >= text && f->key + f->klen <= text + size);
		REQUIRE(f->val >= text && f->val + f->vlen <= text + size);
		REQUIRE(f->klen + 1 + f->vlen <= INFO_LINE_MAX);
		REQUIRE(memchr(f->val, '\n', f->vlen) == NULL);
		for (size_t k = 0; k < f->klen; k++)
			REQUIRE((unsigned char)f->key[k] > 0x20 &&
				(unsigned char)f->key[k] < 0x7f &&
				f->key[k] != ':');
		memcpy(key, f->key, f->klen);
		key[f->klen] = '\0';
		rc = rl_info_get(&in, key, &(const char *){ NULL },
				 &(size_t){ 0 });
		REQUIRE(rc == INFO_OK || rc == INFO_BAD);
		if (i < 64)
			shown(key);
	}
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		shown(named[i]);
	for (;;) {
		last = pos;
		rc = rl_info_replica(&in, &pos, &r);
		if (rc == INFO_ABSENT)
			break;
		REQUIRE(pos > last && pos <= in.n);
		REQUIRE(++walked <= in.n);
		if (rc == INFO_OK)
			REQUIRE(r.lag >= -1 && (r.online == 0 || r.online == 1));
	}
	free(text);

	s = fuzz_cstr(data, size);
	if (rl_parse_version(s, &maj, &min, &pat) == 0)
		REQUIRE(maj >= 0 && maj <= 65535 && min >= 0 &&
			min <= 65535 && pat >= 0 && pat <= 65535);
	free(s);
	return 0;
}
