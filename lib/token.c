/*
 * token.c - the random token that names one holder of a lock.  Release and
 * extend compare it on the server, so it must be unguessable and never
 * repeat: 128 bits from the kernel's CSPRNG.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/types.h>

#include "rlock_int.h"

#define TOKEN_BYTES (RLOCK_TOKEN_LEN / 2)

int rlock_make_token(char *buf)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[TOKEN_BYTES];
	size_t got = 0, i;

	if (buf == NULL) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * getrandom(2) with no flags blocks only until the pool is first
	 * initialised, and requests of up to 256 bytes are not cut short by
	 * the kernel except by a signal; still, loop on short reads and EINTR
	 * rather than rely on that.
	 */
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			/* Never seen in practice; do not spin on it. */
			errno = EIO;
			return -1;
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(raw); i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 0x0f];
	}
	buf[RLOCK_TOKEN_LEN] = '\0';
	return 0;
}
