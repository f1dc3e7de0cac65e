/*
 * luagen.c - turn the server's Lua scripts (lib/scripts/NAME.lua) into
 * the C table rlock_scripts[] at build time, so that the digest EVALSHA
 * names each one by is never written by hand.  For each script: its body
 * as EVAL sends it, its SHA-1, and where each line of the body comes
 * from, for the server's errors, which name a line of the body
 * ("user_script:12").
 *
 * The body is the file with
 *   - each "--@include FILE" line replaced by FILE (beside it, expanded
 *     the same way): the pieces several scripts share;
 *   - each @NAME@ replaced by the value of "#define NAME VALUE" in the
 *     protocol header, the one definition C and Lua both read;
 *   - lines that are only a comment, and blank lines, left out: the body
 *     is what the server parses at every EVAL and keeps in its script
 *     cache.
 *
 * With -d DIR, each body is also written to DIR/NAME.lua and its line
 * map to DIR/NAME.map ("FILE:LINE", one line per line of the body), for
 * luacheck, which must see a script whole.  Built and run by the
 * Makefile; not part of librlock.a.
 *
 *	luagen [-d DIR] HEADER OUT.c SCRIPT.lua...
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

#define MAX_DEPTH 8		/* includes within includes */
#define MAX_DEFS 64
#define MAX_LINE 1024

struct def {
	char name[64], value[64];
};

/* One script as it is built: the body, and for each of its lines the
 * file and line it came from. */
struct script {
	char *body;
	size_t len, cap;
	char **file;		/* nlines of them, each the file's name */
	unsigned *src;
	size_t nlines, capl;
};

static struct def defs[MAX_DEFS];
static size_t ndefs;
static const char *prog = "luagen";
static char tmp[4096];			/* the output as it is written */

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (tmp[0] != '\0')
		remove(tmp);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (p == NULL)
		fail("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		fail("out of memory");
	return d;
}

/* The #defines of the protocol header whose value is one token. */
static void read_defs(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[MAX_LINE];

	if (f == NULL)
		fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		struct def d;

		if (sscanf(line, "#define %63[A-Z0-9_] %63[^ \t\n]", d.name,
			   d.value) != 2)
			continue;
		if (ndefs == MAX_DEFS)
			fail("%s: more than %d definitions", path, MAX_DEFS);
		defs[ndefs++] = d;
	}
	fclose(f);
}

static const char *def_value(const char *name, size_t len)
{
	for (size_t i = 0; i < ndefs; i++)
		if (strlen(defs[i].name) == len &&
		    memcmp(defs[i].name, name, len) == 0)
			return defs[i].value;
	return NULL;
}

static void add(struct script *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->body = xrealloc(s->body, s->cap);
	}
	memcpy(s->body + s->len, p, n);
	s->len += n;
	s->body[s->len] = '\0';
}

/* Append one line of file:lineno to the body, @NAME@ replaced. */
static void add_line(struct script *s, const char *line, const char *file,
		     unsigned lineno)
{
	const char *p = line;

	while (*p != '\0') {
		const char *at = strchr(p, '@'), *end, *v;

		if (at == NULL) {
			add(s, p, strlen(p));
			break;
		}
		add(s, p, (size_t)(at - p));
		for (end = at + 1; isupper((unsigned char)*end) ||
		     isdigit((unsigned char)*end) || *end == '_'; end++)
			;
		/* '@' alone is Lua's (a string holding "@"), not a name. */
		if (end == at + 1 || *end != '@' ||
		    isdigit((unsigned char)at[1])) {
			add(s, at, 1);
			p = at + 1;
			continue;
		}
		v = def_value(at + 1, (size_t)(end - at - 1));
		if (v == NULL)
			fail("%s:%u: %.*s is not defined in the protocol "
			     "header", file, lineno, (int)(end - at + 1), at);
		add(s, v, strlen(v));
		p = end + 1;
	}
	add(s, "\n", 1);
	if (s->nlines == s->capl) {
		s->capl = s->capl ? s->capl * 2 : 256;
		s->file = xrealloc(s->file, s->capl * sizeof(*s->file));
		s->src = xrealloc(s->src, s->capl * sizeof(*s->src));
	}
	s->file[s->nlines] = xstrdup(file);
	s->src[s->nlines++] = lineno;
}

static void expand(struct script *s, const char *path, int depth)
{
	static const char inc[] = "--@include ";
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL ? slash + 1 : path;
	char line[MAX_LINE];
	unsigned lineno = 0;
	FILE *f;

	if (depth > MAX_DEPTH)
		fail("%s: included more than %d deep", path, MAX_DEPTH);
	f = fopen(path, "r");
	if (f == NULL)
		fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t n = strlen(line);

		lineno++;
		if (n == 0 || line[n - 1] != '\n')
			fail("%s:%u: line too long, or no newline at the end",
			     path, lineno);
		line[--n] = '\0';
		/* A long string or comment would make a line that starts
		 * with "--" part of the code: rlock's scripts have none. */
		if (strstr(line, "[[") != NULL || strstr(line, "[=") != NULL)
			fail("%s:%u: long brackets are not supported", path,
			     lineno);
		if (strncmp(line, inc, sizeof(inc) - 1) == 0) {
			char sub[4096];

			snprintf(sub, sizeof(sub), "%.*s%s",
				 (int)(base - path), path,
				 line + sizeof(inc) - 1);
			expand(s, sub, depth + 1);
			continue;
		}
		/* A comment of its own line, indented or not, or a blank
		 * line: nothing for the server to parse. */
		if (strncmp(line + strspn(line, " \t"), "--", 2) == 0 ||
		    line[strspn(line, " \t")] == '\0')
			continue;
		add_line(s, line, base, lineno);
	}
	if (ferror(f))
		fail("%s: read error", path);
	fclose(f);
}

/* The script's name: its file's name without the directory and ".lua". */
static void script_name(const char *path, char *name, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL ? slash + 1 : path;
	size_t n = strlen(base);

	if (n <= 4 || strcmp(base + n - 4, ".lua") != 0 || n - 4 >= len)
		fail("%s: not a NAME.lua file", path);
	memcpy(name, base, n - 4);
	name[n - 4] = '\0';
	for (size_t i = 0; i < n - 4; i++)
		if (!islower((unsigned char)name[i]) && name[i] != '_')
			fail("%s: a script's name is lower case letters",
			     path);
}

static void write_c_string(FILE *f, const char *p, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		/* '?' too: C11 would read "??(" and the like as trigraphs. */
		if (p[i] == '"' || p[i] == '\\' || p[i] == '?')
			fputc('\\', f);
		fputc(p[i], f);
	}
	fputs("\\n\"", f);
}

/* The spans of the body: a new one wherever the next line is not the
 * line after the last of the same file. */
static void write_spans(FILE *f, const char *name, const struct script *s)
{
	fprintf(f, "static const struct script_span %s_span[] = {\n", name);
	for (size_t i = 0; i < s->nlines; i++) {
		if (i > 0 && strcmp(s->file[i], s->file[i - 1]) == 0 &&
		    s->src[i] == s->src[i - 1] + 1)
			continue;
		fprintf(f, "\t{ %zu, %u, \"%s\" },\n", i + 1, s->src[i],
			s->file[i]);
	}
	fprintf(f, "};\n\n");
}

static void write_lint(const char *dir, const char *name,
		       const struct script *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.lua", dir, name);
	f = fopen(path, "w");
	if (f == NULL || fwrite(s->body, 1, s->len, f) != s->len ||
	    fclose(f) != 0)
		fail("%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s.map", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		fail("%s: %s", path, strerror(errno));
	for (size_t i = 0; i < s->nlines; i++)
		fprintf(f, "%s:%u\n", s->file[i], s->src[i]);
	if (fclose(f) != 0)
		fail("%s: %s", path, strerror(errno));
}

static void free_script(struct script *s)
{
	for (size_t i = 0; i < s->nlines; i++)
		free(s->file[i]);
	free(s->file);
	free(s->src);
	free(s->body);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *out;
	char (*names)[64];
	int first, nscripts;
	FILE *f;

	if (argc > 2 && strcmp(argv[1], "-d") == 0) {
		dir = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: luagen [-d DIR] HEADER OUT.c "
			"SCRIPT.lua...\n");
		return 64;
	}
	read_defs(argv[1]);
	out = argv[2];
	first = 3;
	nscripts = argc - first;
	names = xrealloc(NULL, (size_t)nscripts * sizeof(*names));
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	f = fopen(tmp, "w");
	if (f == NULL)
		fail("%s: %s", tmp, strerror(errno));
	fprintf(f, "/* Generated by lib/scripts/luagen from the scripts in "
		"lib/scripts/ and %s:\n * do not edit. */\n"
		"#include \"request.h\"\n\n", argv[1]);
	for (int i = 0; i < nscripts; i++) {
		struct script s = { 0 };
		char hex[41];
		size_t at;

		script_name(argv[first + i], names[i], sizeof(names[i]));
		expand(&s, argv[first + i], 0);
		if (s.len == 0)
			fail("%s: no code", argv[first + i]);
		rl_sha1_hex(s.body, s.len, hex);
		fprintf(f, "static const char %s_body[] =", names[i]);
		for (at = 0; at < s.len;) {
			size_t n = strcspn(s.body + at, "\n");

			fputs("\n\t", f);
			write_c_string(f, s.body + at, n);
			at += n + 1;
		}
		fprintf(f, ";\n\n");
		write_spans(f, names[i], &s);
		fprintf(f, "static const char %s_sha[] = \"%s\";\n\n", names[i],
			hex);
		if (dir != NULL)
			write_lint(dir, names[i], &s);
		free_script(&s);
	}
	fprintf(f, "const struct rlock_script rlock_scripts[RLOCK_SCRIPT_COUNT]"
		" = {\n");
	for (int i = 0; i < nscripts; i++) {
		fprintf(f, "\t[RLOCK_SCRIPT_");
		for (const char *p = names[i]; *p != '\0'; p++)
			fputc(toupper((unsigned char)*p), f);
		fprintf(f, "] = { \"%s\", %s_body, %s_sha, %s_span,\n\t\t"
			"sizeof(%s_span) / sizeof(%s_span[0]) },\n", names[i],
			names[i], names[i], names[i], names[i], names[i]);
	}
	fprintf(f, "};\n");
	free(names);
	if (fclose(f) != 0 || rename(tmp, out) != 0)
		fail("%s: %s", out, strerror(errno));
	return 0;
}
