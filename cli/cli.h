/*
 * cli.h - what the subcommands share: global options, the exit-code
 * table, and the one place that turns a library code into an exit status
 * and a message.
 */
#ifndef RLOCK_CLI_H
#define RLOCK_CLI_H

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "rlock.h"

/* Exit statuses (docs/design.md#exit-status); the table in usage() and
 * EXIT STATUS in man/rlock.1 say the same. */
#define EX_OK 0
#define EX_FREE 1
#define EX_USAGE 64
#define EX_UNAVAILABLE 69
#define EX_SOFTWARE 70
#define EX_OSERR 71
#define EX_TEMPFAIL 75
#define EX_LOST 76
#define EX_NOPERM 77
#define EX_NOEXEC 126
#define EX_NOTFOUND 127

#define CLI_MAX_URLS 16
/* The server tried when none is given. */
#define CLI_DEFAULT_ADDR "127.0.0.1:6379"

/* Long-only option codes, above any character. */
enum {
	OPT_PREFIX = 256,
	OPT_CONNECT_TIMEOUT,
	OPT_IO_TIMEOUT,
	OPT_PASSWORD_FILE,
	OPT_JSON,
	OPT_MIN_HOLD,
	OPT_LABEL,
	OPT_ON_LOST,
	OPT_MAX_TIME,
	OPT_RENEW,
	OPT_PID,
	OPT_FORMAT,
	OPT_FORCE,
	OPT_CACERT,
	OPT_CACERTDIR,
	OPT_CERT,
	OPT_KEY,
	OPT_SNI,
	OPT_INSECURE,
	OPT_SENTINEL_USER,
	OPT_SENTINEL_PASSWORD_FILE,
	OPT_WAIT_REPLICAS,
	OPT_NOTE,
	OPT_PROGRESS,
	OPT_NO_LOG,
	OPT_STATUS,
	OPT_SINCE,
	OPT_MAX_AGE,
	OPT_PROMETHEUS,
	OPT_SUPERSEDE,
	OPT_PRIORITY,
	OPT_ONCE_PER,
	OPT_POOL,
	OPT_COUNT,
	OPT_WITH,
	OPT_RESTART,
	OPT_RESTART_DELAY,
	OPT_LEADER_FILE,
	OPT_STANDBY,
	OPT_PROMOTE,
	OPT_DEMOTE,
	OPT_ON_PROMOTE,
	OPT_ON_DEMOTE,
	OPT_HOOK_TIMEOUT,
	OPT_HEALTH,
	OPT_HEALTH_EVERY,
	OPT_HEALTH_FAILS,
};

#define CLI_GLOBAL_SHORT "u:vqhV"
#define CLI_GLOBAL_LONG                                                   \
	{ "url", required_argument, NULL, 'u' },                          \
	{ "prefix", required_argument, NULL, OPT_PREFIX },                \
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT }, \
	{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },        \
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },  \
	{ "cacert", required_argument, NULL, OPT_CACERT },                \
	{ "cacertdir", required_argument, NULL, OPT_CACERTDIR },          \
	{ "cert", required_argument, NULL, OPT_CERT },                    \
	{ "key", required_argument, NULL, OPT_KEY },                      \
	{ "sni", required_argument, NULL, OPT_SNI },                      \
	{ "insecure", no_argument, NULL, OPT_INSECURE },                  \
	{ "sentinel-user", required_argument, NULL, OPT_SENTINEL_USER },  \
	{ "sentinel-password-file", required_argument, NULL,              \
	  OPT_SENTINEL_PASSWORD_FILE },                                   \
	{ "verbose", no_argument, NULL, 'v' },                            \
	{ "quiet", no_argument, NULL, 'q' },                              \
	{ "json", no_argument, NULL, OPT_JSON },                          \
	{ "no-log", no_argument, NULL, OPT_NO_LOG },                      \
	{ "help", no_argument, NULL, 'h' },                               \
	{ "version", no_argument, NULL, 'V' }

/* Global settings, filled from the command line and the environment. */
struct cli {
	const char *cmd;		/* subcommand, for messages */
	const char *urls[CLI_MAX_URLS];
	size_t nurls;
	char *env_urls;			/* storage for RLOCK_URL's pieces */
	int default_url;		/* no -u, RLOCK_URL or REDIS_URL given */
	const char *prefix;
	int64_t connect_timeout_ms;
	int64_t io_timeout_ms;
	const char *password_file;
	char password[1024];		/* from the file or REDISCLI_AUTH */
	int has_password;
	/* The sentinels' own credentials, for redis-sentinel:// URLs. */
	const char *sentinel_user, *sentinel_password_file;
	char sentinel_password[1024];
	int has_sentinel_password;
	/* TLS, for rediss:// URLs; NULL for the defaults. */
	const char *cacert, *cacertdir, *cert, *key, *sni;
	int insecure;
	int warned_insecure;		/* said once, though run opens two handles */
	int verbose;			/* -1 quiet, 0 normal, 1 verbose */
	int json;
	int no_log;			/* --no-log, RLOCK_LOG=off */
	long log_max;			/* RLOCK_LOG_MAX, 0 the default */
	int log_days;			/* RLOCK_LOG_DAYS, 0 the default */
	int help;
	/* SIGPIPE was ignored when we started (a caller's choice, which a
	 * command run inherits); we ignore it ourselves from the start. */
	int pipe_ignored;
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv, struct cli *g);
	const char *summary;
	const char *usage;		/* usage lines and own options */
};

extern const struct cmd cli_cmds[];

int cmd_run(int argc, char **argv, struct cli *g);
int cmd_acquire(int argc, char **argv, struct cli *g);
int cmd_release(int argc, char **argv, struct cli *g);
int cmd_extend(int argc, char **argv, struct cli *g);
int cmd_status(int argc, char **argv, struct cli *g);
int cmd_bench(int argc, char **argv, struct cli *g);
int cmd_doctor(int argc, char **argv, struct cli *g);
int cmd_log(int argc, char **argv, struct cli *g);
int cmd_last(int argc, char **argv, struct cli *g);
int cmd_pool(int argc, char **argv, struct cli *g);
int cmd_lead(int argc, char **argv, struct cli *g);
int cmd_help(int argc, char **argv, struct cli *g);

/*
 * The numeric fields of /proc/PID/stat whose numbers (1-based, as proc(5)
 * numbers them, ascending, 3 or more) are in fields[0..nf-1], into v.
 * Returns 0, or -1 when the file cannot be read (gone, or not ours) or a
 * field is missing or not a number.
 */
int cli_proc_stat(pid_t pid, const int *fields, size_t nf,
		  unsigned long long *v);

/* Print "rlock: <cmd>: <msg>" to stderr. */
void cli_warn(const struct cli *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print the message and "Try 'rlock <cmd> --help'." and exit 64. */
void cli_usage_error(const struct cli *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Handle option c if it is a global one.  Returns 1 if handled, 0 if not;
 * exits on bad values, --help prints help and exits. */
int cli_global_option(struct cli *g, int c, const char *arg);

/* The options run and acquire share; CLI_LOCK_SHORT and CLI_LOCK_LONG
 * list them.  Returns 1 if c was one of them (exits on bad values). */
int cli_lock_option(const struct cli *g, int c, const char *arg,
		    struct rlock_acquire_opts *ao, int *conflict);

#define CLI_LOCK_SHORT "t:nw:E:sxl:"
#define CLI_LOCK_LONG                                                     \
	{ "ttl", required_argument, NULL, 't' },                          \
	{ "shared", no_argument, NULL, 's' },                             \
	{ "exclusive", no_argument, NULL, 'x' },                          \
	{ "limit", required_argument, NULL, 'l' },                        \
	{ "nonblock", no_argument, NULL, 'n' },                           \
	{ "timeout", required_argument, NULL, 'w' },                      \
	{ "conflict-exit-code", required_argument, NULL, 'E' },           \
	{ "min-hold", required_argument, NULL, OPT_MIN_HOLD },            \
	{ "label", required_argument, NULL, OPT_LABEL },                  \
	{ "wait-replicas", required_argument, NULL, OPT_WAIT_REPLICAS },  \
	{ "note", required_argument, NULL, OPT_NOTE },                    \
	{ "progress", required_argument, NULL, OPT_PROGRESS },            \
	{ "supersede", no_argument, NULL, OPT_SUPERSEDE },                \
	{ "priority", required_argument, NULL, OPT_PRIORITY },            \
	{ "pool", required_argument, NULL, OPT_POOL },                    \
	{ "count", required_argument, NULL, OPT_COUNT },                  \
	{ "with", required_argument, NULL, OPT_WITH }

/* The pool --pool named (the lock NAME run and acquire take), or NULL. */
const char *cli_pool(void);

/* After the options: refuse a lock kind that contradicts itself (-s or
 * -x with --limit N > 1, --pool with -s or --limit, --count without
 * --pool); take the note from RLOCK_NOTE when --note was not given. */
void cli_lock_check(const struct cli *g, struct rlock_acquire_opts *ao);

/* "NAME, OTHER, ..." for a set's wait line (cut at 511 bytes). */
const char *cli_with_text(const char *name,
			  const struct rlock_acquire_opts *ao);

/* When token holds name with others (--with, their record says so), hand
 * rl the set, and point *name at its first name: release, extend and a
 * renewer then act on every lock of it. */
void cli_with_lookup(struct rlock *rl, const char **name, const char *token);

/* After the options and NAME: refuse --with naming NAME again, or with
 * an option it does not take (the locks of a set are exclusive). */
void cli_with_check(const struct cli *g, const char *name,
		    const struct rlock_acquire_opts *ao);

/*
 * getopt_long for a subcommand whose options may come before or after its
 * operands, as in GNU tools ("rlock last NAME --max-age 26h"), without
 * GNU's permutation, which POSIXLY_CORRECT turns off: it runs getopt_long
 * in "-" mode, where each operand comes back as code 1, and collects them.
 * shortopts is given without a leading '+', '-' or ':'; the first call must
 * find optind at 0 (main leaves it so).  Returns the code of each option
 * as getopt_long does, optarg set (':' for a missing value, '?' for an
 * unknown option, for cli_bad_option), never 1; at the end -1, with the
 * operands in the order given, those after a "--" included, in
 * argv[optind..argc-1].
 */
int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts);

/* Whether subcommand cmd (NULL: none) takes option opt ("-w",
 * "--timeout"), as its help lists it. */
int cli_has_option(const char *cmd, const char *opt);

/* The long option of cmd (NULL: none) nearest to the n bytes at opt
 * ("--tiemout": "--timeout"), in buf, when it is a near miss; else NULL. */
const char *cli_nearest_option(const char *cmd, const char *opt, size_t n,
			       char *buf, size_t len);

/* Report a getopt failure ('?' or ':') and exit 64; an unknown long
 * option with the nearest known one. */
void cli_bad_option(struct cli *g, int c, char **argv)
	__attribute__((noreturn));

/* Parse a duration option or exit 64.  ttl: apply the TTL range; zero:
 * allow zero. */
int64_t cli_duration(const struct cli *g, const char *opt, const char *arg,
		     int ttl, int zero);

/* A whole number min..max in digits (with a minus sign where min is
 * negative) for option opt, or exit 64. */
int cli_int(const struct cli *g, const char *opt, const char *arg, long min,
	    long max);

/* Check a lock name or exit 64. */
void cli_check_name(const struct cli *g, const char *name);

/* The one lock NAME left after the options, checked, or exit 64. */
const char *cli_one_name(const struct cli *g, int argc, char **argv);
/* getopt_long stopped at the operand argv[optind]: take it as NAME
 * (*name) and return 1, the options going on after it (run and lead:
 * "rlock run NAME -w 5s -- CMD"); or, when a "--" ended the options before
 * it, return 0 with *after_dashdash set, and a second "--" after NAME
 * passed over. */
int cli_name_operand(int argc, char **argv, const char **name,
		     int *after_dashdash);

/* Apply the environment to what the command line did not set. */
void cli_finish(struct cli *g);

/* Add server URL u (-u, or one of $RLOCK_URL's); a usage error past
 * CLI_MAX_URLS. */
void cli_add_url(struct cli *g, const char *u);
/* Make a library handle for g, or exit with a message. */
struct rlock *cli_open(struct cli *g);

/* Make a library handle for g; NULL with *rc and err set when it cannot
 * be made. */
struct rlock *cli_try_open(struct cli *g, int *rc, char *err, size_t errlen);

/* ---- run's renewal thread (renewer.c) ---- */

struct renewer {
	struct rlock *rl;		/* run's, lent while the thread runs */
	const char *name;
	struct rlock_lease lease;	/* the thread's copy, renewed */
	int stop[2];			/* main -> thread: stop */
	int done[2];			/* thread -> main: finished */
	int at_once;			/* renew at once, not when due */
	int result;			/* rlock_keepalive's code */
	char err[600];
	pthread_t th;
	int started;
};

void renewer_init(struct renewer *rn);

/* Make the thread's pipes: before the lock is taken.  Returns RLOCK_OK or
 * a code with err set. */
int renewer_open(struct renewer *rn, char *err, size_t errlen);

/* Start keeping lease of name alive with rl, which the caller leaves alone
 * until renewer_join or renewer_stop: renewing it when due or, with
 * at_once, now.  Returns 0, or -1 with errno set. */
int renewer_start(struct renewer *rn, struct rlock *rl, const char *name,
		  const struct rlock_lease *lease, int at_once);

/* The descriptor that becomes readable when the thread has finished (the
 * lock lost), or -1 when it is not running. */
int renewer_fd(const struct renewer *rn);

/* Reap a thread whose descriptor became readable; returns its result. */
int renewer_join(struct renewer *rn);

/* The last renewal the thread confirmed, into lease (a copy of the one it
 * was started with), once it has ended; nothing if it never started. */
void renewer_lease(const struct renewer *rn, struct rlock_lease *lease);

/* Stop the thread if it runs, which gives its handle back, and close what
 * renewer_open made. */
void renewer_stop(struct renewer *rn);

/* ---- a command under a lease, for run and lead (child.c) ---------------- */

/* What to do to the command (run) or the followed process (acquire
 * --renew) when the lock is lost. */
enum on_lost { LOST_TERM, LOST_KILL, LOST_IGNORE };

/* The command a holder runs, and how it is supervised. */
struct cli_child {
	struct cli *g;
	const char *name;		/* the lock, for messages */
	const char *shell_cmd;		/* -c STRING, or NULL: argv */
	char **argv;
	int nested;			/* an ancestor holds the lock: no group
					 * of its own, in group if it can */
	pid_t group;			/* the holder's command's group */
	int lead;			/* rlock lead: INT and TERM stop the
					 * command (c->stopped), which never
					 * has the terminal; what its group
					 * leaves is stopped after its end */
	enum on_lost on_lost;
	int64_t kill_after_ms;		/* SIGKILL this long after SIGTERM */
	int64_t max_time_ms;		/* 0: none */
	/* Called on every turn of the supervising loop, which turns again
	 * within the ms it returns (-1: whenever): lead's watchdog. */
	int64_t (*tick)(void *arg);
	void *tick_arg;
	int demote;			/* lead --standby: the signal that
					 * demotes the command (which runs on
					 * after a loss or a stop); 0 none */
	pid_t pid;			/* cli_child_spawn's */
	int exited;			/* it has ended (and was reaped) */
	int step_down;			/* set by tick: stop (or demote) the
					 * command and end the term */
	int signal;			/* out: the signal that ended it */
	int stopped;			/* out: lead, the INT or TERM that
					 * stopped it, 0 none */
};

/* This process's id and start time (field 22 of /proc/PID/stat, clock
 * ticks since boot), "PID:START", into me (48 bytes); "" when unknown. */
void cli_child_me(char *me);

/* The label of c's command: what status shows of the holder, prefix and
 * text (NULL: the command line) as one line, cut at RLOCK_LABEL_MAX bytes,
 * in label (that size + 1).  Returns label. */
const char *cli_child_label(const struct cli_child *c, const char *prefix,
			    const char *text, char *label);

/* Put lease of lock name (key, kind as RLOCK_HELD writes it, me from
 * cli_child_me) into the environment a command inherits: RLOCK_NAME,
 * RLOCK_KEY, RLOCK_TOKEN, RLOCK_FENCE, RLOCK_TTL_MS, RLOCK_SLOT, and
 * RLOCK_HELD as held (what was inherited, NULL none) and this hold. */
void cli_child_env(const char *name, const char *key, const char *kind,
		   const char *me, const char *held,
		   const struct rlock_lease *lease);

/*
 * Start c's command, with the environment set, and supervise it to its
 * end: signals read from sfd are forwarded to it (c->lead: see there),
 * the lease (NULL when an ancestor holds the lock) is kept with rn's
 * thread, and on a loss its group is stopped (c->on_lost) before the
 * lease can end.  oldmask is the signal mask the command gets.  Returns
 * its exit status (128 + N for signal N), or -1 (with a message) when it
 * could not be started; *lost tells whether the lease was lost.
 */
int cli_child_run(struct cli_child *c, struct rlock *rl, int sfd,
		  const sigset_t *oldmask, struct renewer *rn,
		  struct rlock_lease *lease, int *lost);

/*
 * lead --standby: the command started once, outside any lease
 * (cli_child_spawn: c->pid, or -1 with a message); watched while it leads
 * (cli_child_watch, as cli_child_run but a loss or an INT or TERM sends it
 * c->demote and returns at once, *lost or c->stopped telling which;
 * returns its exit status when it ended, c->exited, else 0);
 * cli_child_reaped: its exit status once it has ended, else -1;
 * cli_child_stop: its group stopped (SIGTERM, SIGKILL c->kill_after_ms
 * later) and waited for; returns its exit status.
 */
pid_t cli_child_spawn(struct cli_child *c, const sigset_t *oldmask);
int cli_child_watch(struct cli_child *c, struct rlock *rl, int sfd,
		    struct renewer *rn, struct rlock_lease *lease, int *lost);
int cli_child_reaped(struct cli_child *c);
int cli_child_stop(struct cli_child *c, int sfd);

/* Give up lease after cli_child_run (rn stopped): a loss is said and
 * recorded in the history, else the lock is released (recording ret and
 * c->signal).  Returns ret, or EX_LOST when the lock was lost. */
int cli_child_release(const struct cli_child *c, struct rlock *rl,
		      const struct renewer *rn, const struct rlock_lease *lease,
		      int lost, int ret);

/* ---- systemd's notify protocol, for lead (notify.c) ---------------------- */

struct cli_notify {
	int fd;				/* -1: no NOTIFY_SOCKET */
	struct sockaddr_un addr;
	socklen_t len;
	int64_t watchdog_ms;		/* WATCHDOG=1 this often; 0 never */
	int64_t watchdog_at;		/* the next one, CLOCK_MONOTONIC */
};

/* Open the socket $NOTIFY_SOCKET names (a path, or '@' and an abstract
 * name), if set and well-formed, and take the variable out of the
 * environment the command inherits; with it, $WATCHDOG_USEC (for us when
 * $WATCHDOG_PID is unset or ours) sets how often to send WATCHDOG=1: at
 * half that period. */
void cli_notify_open(struct cli_notify *n);

/* Send WATCHDOG=1 if it is due.  Returns the ms until the next is due, or
 * -1 when there is no watchdog. */
int64_t cli_notify_watchdog(struct cli_notify *n);

/* Send msg ("READY=1", "STATUS=...\n...") if a socket was opened; a
 * message that cannot be sent is dropped, as sd_notify(3) does. */
void cli_notify(const struct cli_notify *n, const char *msg);

void cli_notify_close(struct cli_notify *n);

/* ---- RLOCK_HELD, the locks a process tree holds (held.c) ---------------- */

/* One entry of RLOCK_HELD, decoded. */
struct held_entry {
	const char *key;		/* in the variable, not terminated */
	size_t keylen;
	char kind[24];			/* "x", "s", a limit, "pK" */
	long long pid, start;		/* the holder, and its start time */
	char token[RLOCK_TOKEN_LEN + 1];
};

/*
 * The next entry of the newline-separated list at *p (advanced past it):
 * "KEY\tKIND\tPID:START\tTOKEN", four fields, a key shorter than
 * RLOCK_KEY_MAX, a kind shorter than 24 bytes, PID 2..INT_MAX, START a
 * number, TOKEN 32 lower-case hexadecimal digits; a line that does not
 * read so is skipped.  Returns 1 with h filled, 0 when none is left.
 */
int held_next(const char **p, struct held_entry *h);

/* ---- what acquire --renew's renewer and release leave (leasefile.c) ---- */

/* Write text to the file WHAT of token ("renewing", "lost") in the user's
 * lease directory, made if need be.  Returns 0, or -1. */
int lease_file_write(const char *token, const char *what, const char *text);

/* Read the file WHAT of token into buf.  Returns 0, or -1 (none). */
int lease_file_read(const char *token, const char *what, char *buf,
		    size_t len);

/* Remove the file WHAT of token.  Returns 0, or -1 (there was none). */
int lease_file_remove(const char *token, const char *what);

/* Remove marks of renewers long dead and records of old losses. */
void lease_file_sweep(void);

/* A loss's record as the renewer writes it, "MS REASON\n" (MS the wall
 * clock in ms since the epoch): *ms, and the reason cut at its newline in
 * place.  Returns 0, or -1 for anything else (the file is a user's /tmp:
 * not trusted), rec then untouched. */
int lease_lost_parse(char *rec, long long *ms, const char **reason);

/* Parse --on-lost's argument or exit 64. */
enum on_lost cli_on_lost(const struct cli *g, const char *arg);

/* The exit status for a library code (conflict: the code for BUSY). */
int cli_exit_code(int rc, int conflict);

/* Print the subcommand's --help to stdout and exit 0. */
void cli_help(const struct cli *g) __attribute__((noreturn));

/* ---- text rlock did not write, on its way out (text.c) ---- */

/* The size of a buffer that holds n bytes through cli_vis uncut. */
#define CLI_VIS(n) (4 * (n) + 1)

/* s through rlock_vis into dst (len bytes): what a terminal may show of
 * text from a server or another client.  Returns dst. */
const char *cli_vis(char *dst, size_t len, const char *s);

/* The printf width that pads s to width columns: one column for each
 * UTF-8 character, not each byte. */
int cli_cols(const char *s, int width);

/* The wall clock in ms since the epoch, for what is shown to people. */
long long cli_wall_ms(void);

/* A history event as a JSON object (servers: how many the handle has). */
void cli_event_json(FILE *f, const struct rlock_event *e, int servers);

/* How the run an event ended went: "exit 0 after 12s", "lost (why) after
 * 3s"; and when and where: "2h ago on web3 (root pid 5522)".  Escaped
 * (cli_vis) for stdout: not for cli_warn, which would escape them again. */
const char *cli_event_outcome(const struct rlock_event *e, char *buf,
			      size_t len);
const char *cli_event_when(const struct rlock_event *e, char *buf,
			   size_t len);

/* Say once with -v that a server does not keep the history. */
void cli_history_warn(const struct cli *g, const struct rlock *rl);

/* Write the holder as "host pid N (command)" into buf, as it is: for
 * cli_warn, which escapes the message, or for cli_vis. */
const char *cli_holder(const struct rlock_holder *h, char *buf, size_t len);
/* " and N more" when h is one of N + 1 holders (shared, semaphore), else
 * "". */
const char *cli_more_holders(const struct rlock_holder *h, char *buf,
			     size_t len);

/* The live line of a waiting acquire, on stderr. */
struct cli_waitline {
	const char *name;
	int shown;
};

/* Whether a live line may be drawn: stderr is a terminal, not -q, and
 * NO_COLOR is unset. */
int cli_live_ok(const struct cli *g);

/* An rlock_wait_cb drawing "waiting for NAME: held by ... for ...;
 * waited ..." over itself; arg is a struct cli_waitline. */
void cli_wait_line(const struct rlock_holder *h, int64_t waited, void *arg);

/* ---- a wait's lines where no live line is drawn (progress.c) ---- */

#define CLI_PROGRESS_DEFAULT_MS 30000
#define CLI_PROGRESS_HOLDS 20	/* the holds the estimate is the median of */

/* The state of the lines of one wait. */
struct cli_progress {
	struct cli *g;
	const char *name;		/* the lock read for status, history */
	const char *label;		/* what the line says we wait for */
	const char *const *with;	/* --with: the set's other locks */
	size_t nwith;
	int64_t every_ms;		/* --progress */
	struct rlock *side;		/* status and history, opened at the
					 * first line */
	int side_failed;
	int estimated;			/* the history was read (once) */
	int holds;			/* holds the median is of, 0 none */
	long long median_ms;
};

/* An rlock_wait_cb printing, every --progress DUR of a wait, one line
 * "waiting W for NAME: held A by USER@HOST (pid N, note "..."), K ahead,
 * estimate E (median of H holds)" (man/rlock-run.1, WAITING IN LINE); arg
 * is a struct cli_progress. */
void cli_progress_line(const struct rlock_holder *h, int64_t waited,
		       void *arg);

/* Set up how the wait of ao on name shows itself: the live line when
 * cli_live_ok, else (unless -q) a progress line every ao->wait_cb_ms
 * (--progress; 0 for the default 30s); ao's callback is set to match. */
void cli_wait_setup(struct cli *g, const char *name,
		    struct rlock_acquire_opts *ao, struct cli_waitline *line,
		    struct cli_progress *p);

/* After the wait: erase the live line, close the progress's handle. */
void cli_wait_end(struct cli_waitline *line, struct cli_progress *p);

/* Erase the live line if one was drawn. */
void cli_wait_line_end(struct cli_waitline *l);

/* The NAME [TOKEN] operands of release and extend, from optind; with
 * need_token the token defaults to $RLOCK_TOKEN.  Exits 64 on misuse.
 * Returns the token, NULL only when none is needed nor given. */
const char *cli_name_token(const struct cli *g, int argc, char **argv,
			   const char **name, int need_token);

/* Say why an acquire failed: the error, or (unless -q) who holds the
 * lock, after how long a wait. */
void cli_report_acquire(const struct cli *g, const char *name, int rc,
			struct rlock *rl, const struct rlock_holder *h,
			int64_t wait_ms);

/* Flush stdout; on failure warn and return -1. */
int cli_flush_stdout(const struct cli *g);

/* Print what --version shows (cli/version.c). */
void cli_print_version(void);

/* Write s as a JSON string to f, valid UTF-8 whatever s holds: '"' and
 * '\' escaped, newline and tab as \n and \t, the other C0 controls, DEL,
 * C1 and the characters rlock_utf8_shown hides as \uXXXX, each byte that
 * is no UTF-8 as \ufffd. */
void cli_json_str(FILE *f, const char *s);

/* Write a pool member's properties, "KEY=VALUE" lines (checked when
 * decoded: each has its '='), as a JSON object. */
void cli_json_props(FILE *f, const char *props);

/* Write the lines of s (a pool's member names, one a line) as a JSON
 * array of strings, each cut at RLOCK_MEMBER_MAX bytes. */
void cli_json_lines(FILE *f, const char *s);

/* Write ',"key":' and v as a JSON string, or null when v is NULL or "". */
void cli_json_opt(FILE *f, const char *key, const char *v);

/* Write s as a Prometheus label value, quoted, to f: '\', '"' and
 * newline escaped as the text exposition format says, and what is no
 * UTF-8 or no shown character (C0, DEL, C1, ...) as U+FFFD. */
void cli_prom_str(FILE *f, const char *s);

#endif /* RLOCK_CLI_H */
