/*
 * faultproxy - a TCP proxy on loopback that injects network faults on
 * command, for the fault tests and the safety checker.
 *
 *   faultproxy serve -t PORT -s CTLSOCK [-p PORTFILE] [-l LOGFILE] [-T SECS]
 *	listen on a free 127.0.0.1 port (printed as "port N" on stdout and
 *	written to PORTFILE once the proxy is ready), forward every
 *	connection to 127.0.0.1:PORT, take commands on the unix socket
 *	CTLSOCK, exit on SIGTERM/SIGINT or after SECS (default 900) so that
 *	it never outlives a broken test.
 *   faultproxy ctl CTLSOCK COMMAND [ARG...]
 *	send one command, print the reply; exit 0 when it starts with "ok".
 *
 * Commands ("up" is client to server, "down" server to client):
 *   delay up|down|both MS	hold every chunk MS ms before passing it on
 *   hold up|down|both		blackhole: read and keep bytes, pass nothing
 *   reset			RST every connection, both sides (SO_LINGER 0)
 *   refuse			close the listener: connects get ECONNREFUSED
 *   cut PATTERN [N]		the Nth request (default 1) from now whose
 *				bytes contain PATTERN is passed on; the reply
 *				to it is thrown away and both sides get a RST
 *				(the server did it, the client never heard)
 *   drop PATTERN [N]		the same, but RST before the request is
 *				passed on (the server never sees it)
 *   normal			no delay, no hold, listen again, disarm cut
 *				and drop; held bytes go on their way
 *   stats			counters: accepted active up down cuts drops
 *				resets
 *
 * One thread, poll(2), non-blocking sockets.  Every queue is bounded
 * (QMAX bytes a direction): a full queue stops reading from its source,
 * which TCP turns into back-pressure, as a slow network would.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAXCONN 256
#define MAXCTL 8
#define QMAX (256 << 10)	/* bytes queued in one direction */
#define CHUNK 16384
#define TAIL 127		/* bytes kept to match patterns across reads */
#define PATMAX 128

enum { UP, DOWN };

struct chunk {
	struct chunk *next;
	long long due;		/* CLOCK_MONOTONIC ms when it may go */
	size_t len, off;
	char data[];
};

/* One direction of a connection: bytes read from src wait here for dst. */
struct dir {
	struct chunk *head, *tail;
	size_t queued;
	int eof;		/* src said EOF (or failed) */
	int shut;		/* dst got our FIN */
};

struct conn {
	int used;
	int fd[2];		/* [UP] the client side, [DOWN] the server */
	int connecting;		/* server side connect in progress */
	struct dir d[2];	/* d[UP]: client to server */
	char tail[TAIL];	/* last bytes seen going up */
	size_t taillen;
	int cut_armed;		/* drop the next reply and reset */
};

struct ctl {
	int fd;
	char buf[512];
	size_t len;
};

static struct conn conns[MAXCONN];
static struct ctl ctls[MAXCTL];
static int listen_fd = -1, ctl_fd = -1, target_port, listen_port;
static long long delay_ms[2];
static int hold[2], refusing;
static char cut_pat[PATMAX], drop_pat[PATMAX];
static int cut_left, drop_left;
static unsigned long long n_accepted, n_bytes[2], n_cuts, n_drops, n_resets;
static FILE *logfp;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	if (logfp == NULL)
		return;
	fprintf(logfp, "%lld ", now_ms());
	va_start(ap, fmt);
	vfprintf(logfp, fmt, ap);
	va_end(ap);
	fputc('\n', logfp);
	fflush(logfp);
}

static void die(const char *what)
{
	fprintf(stderr, "faultproxy: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- connections ----------------------------------------------------- */

/* Close fd with a RST instead of a FIN. */
static void close_rst(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void free_queue(struct dir *d)
{
	while (d->head != NULL) {
		struct chunk *c = d->head;

		d->head = c->next;
		free(c);
	}
	d->tail = NULL;
	d->queued = 0;
}

static void rl_conn_close(struct conn *c, int rst)
{
	for (int i = 0; i < 2; i++) {
		if (rst)
			close_rst(c->fd[i]);
		else if (c->fd[i] >= 0)
			close(c->fd[i]);
		free_queue(&c->d[i]);
	}
	logmsg("close conn %ld%s", (long)(c - conns), rst ? " (rst)" : "");
	memset(c, 0, sizeof(*c));
	c->fd[0] = c->fd[1] = -1;
}

static void do_accept(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct conn *c = NULL;
	int cfd, sfd, one = 1;

	cfd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	for (int i = 0; i < MAXCONN; i++) {
		if (!conns[i].used) {
			c = &conns[i];
			break;
		}
	}
	if (c == NULL) {
		close_rst(cfd);
		return;
	}
	sfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sfd < 0) {
		close_rst(cfd);
		return;
	}
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sa.sin_port = htons((unsigned short)target_port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(c, 0, sizeof(*c));
	c->used = 1;
	c->fd[UP] = cfd;
	c->fd[DOWN] = sfd;
	if (connect(sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS) {
			/* The target is down: the client sees a reset. */
			rl_conn_close(c, 1);
			return;
		}
		c->connecting = 1;
	}
	n_accepted++;
	logmsg("accept conn %ld", (long)(c - conns));
}

static void reset_all(void)
{
	for (int i = 0; i < MAXCONN; i++) {
		if (conns[i].used) {
			rl_conn_close(&conns[i], 1);
			n_resets++;
		}
	}
}

/* Does the request going up, with what came before it, hold pat? */
static int matches(struct conn *c, const char *pat, const char *buf,
		   size_t n)
{
	char win[TAIL + CHUNK];
	size_t plen = strlen(pat);

	if (plen == 0)
		return 0;
	memcpy(win, c->tail, c->taillen);
	memcpy(win + c->taillen, buf, n);
	return memmem(win, c->taillen + n, pat, plen) != NULL;
}

static void keep_tail(struct conn *c, const char *buf, size_t n)
{
	char win[TAIL + CHUNK];
	size_t all = c->taillen + n;

	memcpy(win, c->tail, c->taillen);
	memcpy(win + c->taillen, buf, n);
	c->taillen = all > TAIL ? TAIL : all;
	memcpy(c->tail, win + all - c->taillen, c->taillen);
}

/* Read what src has for the other side.  Returns -1 when the connection
 * was closed here. */
static int pump_in(struct conn *c, int dir)
{
	char buf[CHUNK];
	struct dir *d = &c->d[dir];
	struct chunk *ch;
	ssize_t n;

	n = recv(c->fd[dir], buf, sizeof(buf), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		d->eof = 1;
		logmsg("conn %ld %s eof (%s)", (long)(c - conns),
		       dir == UP ? "client" : "server",
		       n == 0 ? "fin" : strerror(errno));
		return 0;
	}
	if (dir == DOWN && c->cut_armed) {
		/* The reply to the marked request: the client never gets
		 * it, and neither side gets a polite goodbye. */
		logmsg("cut conn %ld: dropped %zd reply bytes",
		       (long)(c - conns), n);
		n_cuts++;
		rl_conn_close(c, 1);
		return -1;
	}
	if (dir == UP && drop_left > 0 && matches(c, drop_pat, buf, (size_t)n)) {
		if (--drop_left == 0) {
			logmsg("drop conn %ld before %zd bytes",
			       (long)(c - conns), n);
			n_drops++;
			rl_conn_close(c, 1);
			return -1;
		}
	}
	if (dir == UP && cut_left > 0 && matches(c, cut_pat, buf, (size_t)n)) {
		if (--cut_left == 0) {
			logmsg("cut armed on conn %ld", (long)(c - conns));
			c->cut_armed = 1;
		}
	}
	if (dir == UP)
		keep_tail(c, buf, (size_t)n);
	ch = malloc(sizeof(*ch) + (size_t)n);
	if (ch == NULL)
		die("malloc");
	ch->next = NULL;
	ch->due = now_ms() + delay_ms[dir];
	ch->len = (size_t)n;
	ch->off = 0;
	memcpy(ch->data, buf, (size_t)n);
	if (d->tail != NULL)
		d->tail->next = ch;
	else
		d->head = ch;
	d->tail = ch;
	d->queued += (size_t)n;
	n_bytes[dir] += (unsigned long long)n;
	return 0;
}

/* Pass on what is due in direction dir.  Returns -1 when the connection
 * was closed here. */
static int pump_out(struct conn *c, int dir)
{
	struct dir *d = &c->d[dir];
	int dst = c->fd[dir == UP ? DOWN : UP];
	long long now = now_ms();

	while (d->head != NULL && !hold[dir] && d->head->due <= now) {
		struct chunk *ch = d->head;
		ssize_t n = send(dst, ch->data + ch->off, ch->len - ch->off,
				 MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0) {
			/* The receiver is gone: so is the connection, and
			 * the other side learns it the hard way. */
			logmsg("conn %ld send %s: %s", (long)(c - conns),
			       dir == UP ? "up" : "down", strerror(errno));
			rl_conn_close(c, 1);
			return -1;
		}
		ch->off += (size_t)n;
		d->queued -= (size_t)n;
		if (ch->off < ch->len)
			return 0;
		d->head = ch->next;
		if (d->head == NULL)
			d->tail = NULL;
		free(ch);
	}
	if (d->eof && d->head == NULL && !d->shut) {
		shutdown(dst, SHUT_WR);
		d->shut = 1;
	}
	if (c->d[UP].shut && c->d[DOWN].shut) {
		rl_conn_close(c, 0);
		return -1;
	}
	return 0;
}

/* ---- control --------------------------------------------------------- */

static int open_listener(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		close(fd);
		return -1;
	}
	listen_port = ntohs(sa.sin_port);
	return fd;
}

static int parse_dirs(const char *w, int *dirs)
{
	if (w == NULL)
		return -1;
	if (strcmp(w, "up") == 0)
		dirs[UP] = 1;
	else if (strcmp(w, "down") == 0)
		dirs[DOWN] = 1;
	else if (strcmp(w, "both") == 0)
		dirs[UP] = dirs[DOWN] = 1;
	else
		return -1;
	return 0;
}

/* Carry out one command line; the reply goes into out. */
static void command(char *line, char *out, size_t outlen)
{
	char *w[4] = { NULL };
	char *save = NULL, *p;
	int nw = 0, dirs[2] = { 0 };
	long v;

	for (p = strtok_r(line, " \t\r\n", &save); p != NULL && nw < 4;
	     p = strtok_r(NULL, " \t\r\n", &save))
		w[nw++] = p;
	if (nw == 0) {
		snprintf(out, outlen, "err empty command\n");
		return;
	}
	logmsg("ctl: %s %s %s", w[0], w[1] ? w[1] : "", w[2] ? w[2] : "");
	if (strcmp(w[0], "delay") == 0) {
		if (parse_dirs(w[1], dirs) != 0 || w[2] == NULL ||
		    (v = strtol(w[2], &p, 10)) < 0 || *p != '\0' ||
		    v > 600000) {
			snprintf(out, outlen, "err usage: delay up|down|both MS\n");
			return;
		}
		for (int i = 0; i < 2; i++)
			if (dirs[i])
				delay_ms[i] = v;
	} else if (strcmp(w[0], "hold") == 0) {
		if (parse_dirs(w[1], dirs) != 0) {
			snprintf(out, outlen, "err usage: hold up|down|both\n");
			return;
		}
		for (int i = 0; i < 2; i++)
			if (dirs[i])
				hold[i] = 1;
	} else if (strcmp(w[0], "reset") == 0) {
		reset_all();
	} else if (strcmp(w[0], "refuse") == 0) {
		if (listen_fd >= 0)
			close(listen_fd);
		listen_fd = -1;
		refusing = 1;
	} else if (strcmp(w[0], "cut") == 0 || strcmp(w[0], "drop") == 0) {
		int is_cut = w[0][0] == 'c';

		v = 1;
		if (w[1] == NULL || strlen(w[1]) >= PATMAX ||
		    (w[2] != NULL && ((v = strtol(w[2], &p, 10)) < 1 ||
				      *p != '\0'))) {
			snprintf(out, outlen, "err usage: %s PATTERN [N]\n",
				 w[0]);
			return;
		}
		snprintf(is_cut ? cut_pat : drop_pat, PATMAX, "%s", w[1]);
		if (is_cut)
			cut_left = (int)v;
		else
			drop_left = (int)v;
	} else if (strcmp(w[0], "normal") == 0) {
		delay_ms[UP] = delay_ms[DOWN] = 0;
		hold[UP] = hold[DOWN] = 0;
		cut_left = drop_left = 0;
		for (int i = 0; i < MAXCONN; i++)
			conns[i].cut_armed = 0;
		if (refusing) {
			listen_fd = open_listener(listen_port);
			if (listen_fd < 0) {
				snprintf(out, outlen, "err cannot listen on "
					 "port %d again: %s\n", listen_port,
					 strerror(errno));
				return;
			}
			refusing = 0;
		}
	} else if (strcmp(w[0], "stats") != 0) {
		snprintf(out, outlen, "err unknown command '%s'\n", w[0]);
		return;
	}
	{
		int active = 0;

		for (int i = 0; i < MAXCONN; i++)
			active += conns[i].used;
		snprintf(out, outlen, "ok accepted=%llu active=%d up=%llu "
			 "down=%llu cuts=%llu drops=%llu resets=%llu "
			 "cut_armed=%d drop_armed=%d\n", n_accepted, active,
			 n_bytes[UP], n_bytes[DOWN], n_cuts, n_drops, n_resets,
			 cut_left, drop_left);
	}
}

static void ctl_read(struct ctl *k)
{
	char out[512];
	ssize_t n;
	char *nl;

	n = recv(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		k->len += (size_t)n;
	k->buf[k->len] = '\0';
	nl = strchr(k->buf, '\n');
	if (nl == NULL && n > 0 && k->len < sizeof(k->buf) - 1)
		return;
	if (nl != NULL)
		*nl = '\0';
	if (k->len == 0) {
		close(k->fd);
		k->fd = -1;
		return;
	}
	command(k->buf, out, sizeof(out));
	/* A short reply on a fresh unix socket fits its buffer. */
	if (send(k->fd, out, strlen(out), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		logmsg("ctl reply: %s", strerror(errno));
	close(k->fd);
	k->fd = -1;
	k->len = 0;
}

/* ---- main loop ------------------------------------------------------- */

static int serve(int argc, char **argv)
{
	const char *ctl_path = NULL, *port_file = NULL, *log_file = NULL;
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct pollfd pfd[2 + MAXCTL + 2 * MAXCONN];
	int slot[MAXCONN][2], ctl_slot[MAXCTL];
	long long end, lifetime = 900;
	sigset_t sigs;
	int sfd, opt;

	while ((opt = getopt(argc, argv, "t:s:p:l:T:")) != -1) {
		switch (opt) {
		case 't':
			target_port = atoi(optarg);
			break;
		case 's':
			ctl_path = optarg;
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'l':
			log_file = optarg;
			break;
		case 'T':
			lifetime = atoll(optarg);
			break;
		default:
			return 2;
		}
	}
	if (target_port <= 0 || target_port > 65535 || ctl_path == NULL ||
	    strlen(ctl_path) >= sizeof(su.sun_path) || lifetime <= 0) {
		fprintf(stderr, "usage: faultproxy serve -t PORT -s CTLSOCK "
			"[-p PORTFILE] [-l LOGFILE] [-T SECS]\n");
		return 2;
	}
	if (log_file != NULL && (logfp = fopen(log_file, "ae")) == NULL)
		die(log_file);
	for (int i = 0; i < MAXCONN; i++)
		conns[i].fd[0] = conns[i].fd[1] = -1;
	for (int i = 0; i < MAXCTL; i++)
		ctls[i].fd = -1;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd");
	signal(SIGPIPE, SIG_IGN);

	listen_fd = open_listener(0);
	if (listen_fd < 0)
		die("listen");
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		die("socket");
	snprintf(su.sun_path, sizeof(su.sun_path), "%s", ctl_path);
	unlink(ctl_path);
	if (bind(ctl_fd, (struct sockaddr *)&su, sizeof(su)) < 0 ||
	    listen(ctl_fd, 8) < 0)
		die(ctl_path);
	if (port_file != NULL) {
		char tmp[4096];
		FILE *f;

		/* Written whole and renamed: a reader never sees half. */
		snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
		f = fopen(tmp, "we");
		if (f == NULL || fprintf(f, "%d\n", listen_port) < 0 ||
		    fclose(f) != 0 || rename(tmp, port_file) != 0)
			die(port_file);
	}
	printf("port %d\n", listen_port);
	fflush(stdout);
	logmsg("listening on %d, target %d", listen_port, target_port);

	end = now_ms() + lifetime * 1000;
	for (;;) {
		long long now = now_ms(), wake = end;
		int np = 0, i_listen = -1, i_ctl, i_sig, timeout;

		if (now >= end) {
			logmsg("lifetime over");
			break;
		}
		pfd[np].fd = sfd;
		pfd[np].events = POLLIN;
		i_sig = np++;
		pfd[np].fd = ctl_fd;
		pfd[np].events = POLLIN;
		i_ctl = np++;
		if (listen_fd >= 0) {
			pfd[np].fd = listen_fd;
			pfd[np].events = POLLIN;
			i_listen = np++;
		}
		for (int k = 0; k < MAXCTL; k++) {
			ctl_slot[k] = -1;
			if (ctls[k].fd < 0)
				continue;
			pfd[np].fd = ctls[k].fd;
			pfd[np].events = POLLIN;
			ctl_slot[k] = np++;
		}
		for (int i = 0; i < MAXCONN; i++) {
			struct conn *c = &conns[i];

			for (int s = 0; s < 2; s++) {
				int dir_in = s, dir_out = s == UP ? DOWN : UP;
				short ev = 0;

				slot[i][s] = -1;
				if (!c->used)
					continue;
				if (s == DOWN && c->connecting) {
					ev = POLLOUT;
				} else {
					/* Read from side s while its queue
					 * has room; write to it while the
					 * other direction has bytes due. */
					if (!c->d[dir_in].eof &&
					    c->d[dir_in].queued < QMAX)
						ev |= POLLIN;
					if (c->d[dir_out].head != NULL &&
					    !hold[dir_out]) {
						if (c->d[dir_out].head->due <=
						    now)
							ev |= POLLOUT;
						else if (c->d[dir_out].head->due <
							 wake)
							wake = c->d[dir_out].head->due;
					}
				}
				/* Nothing wanted: leave the socket out, or
				 * a reset peer would wake us for ever. */
				pfd[np].fd = ev != 0 ? c->fd[s] : -1;
				pfd[np].events = ev;
				slot[i][s] = np++;
			}
		}
		for (int k = 0; k < np; k++)
			pfd[k].revents = 0;
		timeout = (int)(wake - now);
		if (timeout < 0)
			timeout = 0;
		if (poll(pfd, (nfds_t)np, timeout) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (pfd[i_sig].revents) {
			logmsg("signal: exiting");
			break;
		}
		if (pfd[i_ctl].revents) {
			int fd = accept4(ctl_fd, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd >= 0) {
				int k;

				for (k = 0; k < MAXCTL && ctls[k].fd >= 0; k++)
					;
				if (k == MAXCTL) {
					close(fd);
				} else {
					ctls[k].fd = fd;
					ctls[k].len = 0;
				}
			}
		}
		for (int k = 0; k < MAXCTL; k++) {
			/* One accepted above waits for the next round. */
			if (ctl_slot[k] >= 0 && ctls[k].fd >= 0 &&
			    pfd[ctl_slot[k]].revents)
				ctl_read(&ctls[k]);
		}
		for (int i = 0; i < MAXCONN; i++) {
			struct conn *c = &conns[i];
			struct pollfd *pu, *pd;

			/* A connection accepted above waits for the next
			 * round. */
			if (!c->used || slot[i][UP] < 0 || slot[i][DOWN] < 0)
				continue;
			pu = &pfd[slot[i][UP]];
			pd = &pfd[slot[i][DOWN]];
			if (c->connecting) {
				int err = 0;
				socklen_t len = sizeof(err);

				if (pd->revents == 0)
					continue;
				getsockopt(c->fd[DOWN], SOL_SOCKET, SO_ERROR,
					   &err, &len);
				if (err != 0) {
					logmsg("conn %d: connect: %s", i,
					       strerror(err));
					rl_conn_close(c, 1);
					continue;
				}
				c->connecting = 0;
				continue;
			}
			if ((pu->revents & (POLLIN | POLLERR | POLLHUP)) &&
			    pump_in(c, UP) < 0)
				continue;
			if ((pd->revents & (POLLIN | POLLERR | POLLHUP)) &&
			    pump_in(c, DOWN) < 0)
				continue;
			if (pump_out(c, UP) < 0)
				continue;
			pump_out(c, DOWN);
		}
		/* Last, so that a slot freed above is not mistaken for the
		 * new connection in this round. */
		if (i_listen >= 0 && listen_fd >= 0 && pfd[i_listen].revents)
			do_accept();
	}
	reset_all();
	if (listen_fd >= 0)
		close(listen_fd);
	close(ctl_fd);
	unlink(ctl_path);
	return 0;
}

static int ctl(int argc, char **argv)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	char line[512], reply[512];
	size_t len = 0, got = 0;
	ssize_t n;
	int fd;

	if (argc < 2 || strlen(argv[0]) >= sizeof(su.sun_path)) {
		fprintf(stderr, "usage: faultproxy ctl CTLSOCK COMMAND [ARG...]\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
					i > 1 ? " " : "", argv[i]);
	if (len >= sizeof(line) - 1) {
		fprintf(stderr, "faultproxy: command too long\n");
		return 2;
	}
	line[len++] = '\n';
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(su.sun_path, sizeof(su.sun_path), "%s", argv[0]);
	if (connect(fd, (struct sockaddr *)&su, sizeof(su)) < 0)
		die(argv[0]);
	if (write(fd, line, len) != (ssize_t)len)
		die("write");
	while (got < sizeof(reply) - 1 &&
	       (n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += (size_t)n;
	reply[got] = '\0';
	close(fd);
	fputs(reply, stdout);
	return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return serve(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "ctl") == 0)
		return ctl(argc - 2, argv + 2);
	fprintf(stderr, "usage: faultproxy serve -t PORT -s CTLSOCK "
		"[-p PORTFILE] [-l LOGFILE] [-T SECS]\n"
		"       faultproxy ctl CTLSOCK COMMAND [ARG...]\n");
	return 2;
}
