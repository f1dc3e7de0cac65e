/*
 * text.c - the one way out for text rlock did not write (server errors,
 * hosts, users, commands, notes, lock names, history entries): to a
 * terminal through rlock_vis, into JSON as valid UTF-8, into Prometheus
 * label values as the text exposition format wants them.  The fuzz target
 * tests/fuzz/fuzz_text.c checks all three.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *cli_vis(char *dst, size_t len, const char *s)
{
	return rlock_vis(dst, len, s, strlen(s));
}

int cli_cols(const char *s, int width)
{
	int extra = 0;

	/* printf pads by bytes; a UTF-8 character takes one column for
	 * its several bytes (wide East Asian characters take two, which
	 * this does not know), so the width grows by its continuation
	 * bytes. */
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0';
	     p++) {
		if ((*p & 0xc0) == 0x80)
			extra++;
	}
	return width + extra;
}

/* Code point c as \uXXXX, a surrogate pair above U+FFFF (RFC 8259). */
static void json_u(FILE *f, uint32_t c)
{
	if (c > 0xffff) {
		c -= 0x10000;
		fprintf(f, "\\u%04x\\u%04x", 0xd800 + (unsigned)(c >> 10),
			0xdc00 + (unsigned)(c & 0x3ff));
	} else {
		fprintf(f, "\\u%04x", (unsigned)c);
	}
}

void cli_json_str(FILE *f, const char *s)
{
	size_t n = strlen(s), i = 0, k;
	uint32_t c;

	fputc('"', f);
	while (i < n) {
		unsigned char b = (unsigned char)s[i];

		k = rlock_utf8_char(s + i, n - i, &c);
		if (k == 0) {
			/* No UTF-8: the replacement character, one per
			 * byte, so that the text stays valid JSON. */
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (b == '"' || b == '\\')
			fprintf(f, "\\%c", b);
		else if (b == '\n')
			fputs("\\n", f);
		else if (b == '\t')
			fputs("\\t", f);
		else if (!rlock_utf8_shown(c))
			json_u(f, c);	/* C0, DEL, C1, hidden ones */
		else
			fwrite(s + i, 1, k, f);
		i += k;
	}
	fputc('"', f);
}

void cli_json_props(FILE *f, const char *props)
{
	char buf[RLOCK_PROPS_MAX + 1];

	fputc('{', f);
	for (const char *p = props; *p != '\0';) {
		const char *eq = strchr(p, '='), *nl = strchr(p, '\n');
		size_t vl = nl != NULL ? (size_t)(nl - eq - 1) : strlen(eq + 1);

		if (p != props)
			fputc(',', f);
		snprintf(buf, sizeof(buf), "%.*s", (int)(eq - p), p);
		cli_json_str(f, buf);
		fputc(':', f);
		snprintf(buf, sizeof(buf), "%.*s", (int)vl, eq + 1);
		cli_json_str(f, buf);
		p = nl != NULL ? nl + 1 : eq + 1 + vl;
	}
	fputc('}', f);
}

void cli_json_lines(FILE *f, const char *s)
{
	char line[RLOCK_MEMBER_MAX + 1];

	fputc('[', f);
	for (const char *p = s; *p != '\0';) {
		size_t l = strcspn(p, "\n");
		size_t k = l < sizeof(line) ? l : sizeof(line) - 1;

		memcpy(line, p, k);
		line[k] = '\0';
		if (p != s)
			fputc(',', f);
		cli_json_str(f, line);
		p += l + (p[l] == '\n');
	}
	fputc(']', f);
}

void cli_json_opt(FILE *f, const char *key, const char *v)
{
	fprintf(f, ",\"%s\":", key);
	if (v != NULL && v[0] != '\0')
		cli_json_str(f, v);
	else
		fputs("null", f);
}

void cli_prom_str(FILE *f, const char *s)
{
	size_t n = strlen(s), i = 0, k;
	uint32_t c;

	fputc('"', f);
	while (i < n) {
		unsigned char b = (unsigned char)s[i];

		k = rlock_utf8_char(s + i, n - i, &c);
		if (b == '"' || b == '\\') {
			fprintf(f, "\\%c", b);
		} else if (b == '\n') {
			fputs("\\n", f);
		} else if (k == 0 || !rlock_utf8_shown(c)) {
			/* The format has no other escapes: what is no
			 * UTF-8 or no shown character is U+FFFD. */
			fputs("\xef\xbf\xbd", f);
			if (k == 0)
				k = 1;
		} else {
			fwrite(s + i, 1, k, f);
		}
		i += k;
	}
	fputc('"', f);
}
