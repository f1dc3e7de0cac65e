/*
 * test_name.c - rlock_check_name: the lock names the CLI accepts, and the
 * three reasons it gives for refusing one.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"

static void good(const char *name)
{
	const char *why = "not set";

	unit_context("name '%s'", name);
	CHECK_INT(rlock_check_name(name, &why), RLOCK_OK);
	CHECK(why == NULL);
}

static void bad(const char *name, size_t len, const char *want)
{
	const char *why = NULL;

	unit_context("name of %zu bytes", len);
	CHECK_INT(rlock_check_name(name, &why), RLOCK_EUSAGE);
	CHECK_STR(why, want);
}

void test_name(void)
{
	static const char ctl[] = "contains a control character";
	static const char lng[] = "longer than 1024 bytes";
	char buf[RLOCK_NAME_MAX + 2];
	char one[4];
	char *big;
	int c;

	good("x");
	good("nightly-backup");
	good("a:b/c{d}e[f]*?");	/* key-pattern characters are fine */
	good("with space");
	good(" ");
	good("\"quoted\" 'name' $HOME `cmd` \\");
	good("caf\xc3\xa9");	/* UTF-8 */
	good("\x80\xff");	/* bytes above 0x7f are not control */

	/* Exactly 1024 bytes is the limit; 1025 is over it. */
	memset(buf, 'n', RLOCK_NAME_MAX);
	buf[RLOCK_NAME_MAX] = '\0';
	good(buf);
	buf[RLOCK_NAME_MAX] = 'n';
	buf[RLOCK_NAME_MAX + 1] = '\0';
	bad(buf, RLOCK_NAME_MAX + 1, lng);
	/* The length is reported before a control character past it. */
	buf[RLOCK_NAME_MAX] = '\n';
	bad(buf, RLOCK_NAME_MAX + 1, lng);
	/* ... but a control character inside the limit is found. */
	buf[RLOCK_NAME_MAX] = '\0';
	buf[RLOCK_NAME_MAX - 1] = '\x1b';
	bad(buf, RLOCK_NAME_MAX, ctl);

	/*
	 * The check must not read past the limit: an unterminated buffer of
	 * 1025 bytes is enough to decide (valgrind and ASan watch this).
	 */
	big = malloc(RLOCK_NAME_MAX + 1);
	if (big != NULL) {
		memset(big, 'b', RLOCK_NAME_MAX + 1);
		bad(big, RLOCK_NAME_MAX + 1, lng);
		free(big);
	}
	big = malloc(1 << 20);
	if (big != NULL) {
		memset(big, 'b', (1 << 20) - 1);
		big[(1 << 20) - 1] = '\0';
		bad(big, (1 << 20) - 1, lng);
		free(big);
	}

	bad("", 0, "empty");
	bad(NULL, 0, "empty");

	/* Every control byte, alone and inside a name. */
	for (c = 1; c < 0x20; c++) {
		one[0] = (char)c;
		one[1] = '\0';
		bad(one, 1, ctl);
		one[0] = 'a';
		one[1] = (char)c;
		one[2] = 'b';
		one[3] = '\0';
		bad(one, 3, ctl);
	}
	bad("\x7f", 1, ctl);
	bad("a\x7f", 2, ctl);
	bad("a\nb", 3, ctl);
	bad("\x1b[2J", 4, ctl);
	bad("name\r", 5, ctl);

	/* why may be NULL. */
	CHECK_INT(rlock_check_name("ok", NULL), RLOCK_OK);
	CHECK_INT(rlock_check_name("", NULL), RLOCK_EUSAGE);
	unit_context(NULL);
}
