#!/usr/bin/env bats
# tls.bats - rediss://: verification of the chain and of the name, mutual
# TLS, passwords, the wrong scheme on either side, and every subcommand
# (run and its renewals, waiting on pub/sub, acquire --renew, status, bench,
# Redlock) over TLS, a server killed and restarted, a TCP proxy that
# blackholes the TLS bytes; the lock's history (log, last, log -f) over
# TLS; the line's policies (--once-per, --supersede, --priority) over TLS;
# libssl is loaded only when a rediss:// URL is used.
#
# Servers for the whole file (tls_helper.bash):
#	T	TLS only, client certificates optional (the default URL)
#	W	TLS only, a certificate for wrong.example
#	M	TLS only, client certificates required
#	P	TLS only, --requirepass s3cret and an ACL user locker:pw1
#	B	both a plain port and a TLS port

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper
load proxy_helper

export CA=$CERTS/ca.crt

setup_file() {
	tls_make_certs
	start_redis_tls T
	start_redis_tls W --tls-cert-file "$CERTS/wrongname.crt" \
		--tls-key-file "$CERTS/wrongname.key"
	start_redis_tls M --tls-auth-clients yes
	start_redis_tls P --requirepass s3cret
	rcli P ACL SETUSER locker on '>pw1' '~*' '&*' '+@all' >/dev/null
	start_redis_tls_plain B
	export T_DEFAULT_URL=$T_URL
}

teardown_file() { rl_teardown_file; }
setup() { rl_setup; }
teardown() {
	stop_all_proxies
	rl_teardown
}

# The options of a client that mutual TLS accepts.
MTLS=(--cert "$CERTS/client.crt" --key "$CERTS/client.key")

# ---- verified connections -------------------------------------------------

@test "rediss:// with --cacert: run, acquire, extend, status and release work" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" run r1 -- sh -c \
		'echo "$RLOCK_TOKEN"; redis-cli --tls --cacert "$CA" -p "$T_PORT" GET "$RLOCK_KEY"'
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^[0-9a-f]{32}$'
	assert_equal "${lines[1]}" "${lines[0]}"
	tlock_free r1

	local token
	token=$("$RLOCK" --cacert "$CA" acquire -t 20s a1)
	assert_equal "$(tholder a1)" "$token"
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" extend -t 60s a1 "$token"
	(($(tpttl a1) > 30000)) || fail "extend did not reach the server: pttl $(tpttl a1)"
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" status a1
	assert_equal "$stderr" ""
	assert_fence "$(meta a1 fence T)"
	assert_status_row "${lines[1]}" a1 held "$(meta a1 fence T)"
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" status --json a1
	json_check "$output" \
		'len(d["locks"]) == 1' \
		'd["locks"][0]["held"] is True' \
		"d['locks'][0]['token_prefix'] == '${token:0:8}'" \
		'30000 < d["locks"][0]["ttl_ms"] <= 60000'
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" release a1 "$token"
	assert_equal "$stderr" ""
	tlock_free a1
	run -1 "$RLOCK" --cacert "$CA" status a1
}

@test "over TLS a waiting run is handed the lock by the release itself, with the grant's fence" {
	baton_handoff T tb --cacert "$CA"
}

@test "RLOCK_CACERT, RLOCK_CERT and RLOCK_CERT_KEY stand in for the flags; a flag beats the variable" {
	# With the fences ahead of the clock, every grant on M is above c.
	local c
	c=$(fence_ahead e2 M)
	RLOCK_CACERT=$CA run -0 "$RLOCK" run e1 -- true
	# the flag wins in both directions
	RLOCK_CACERT=$CERTS/untrusted.crt run -0 "$RLOCK" --cacert "$CA" run e1 -- true
	RLOCK_CACERT=$CA run -69 --separate-stderr "$RLOCK" --cacert "$CERTS/untrusted.crt" run e1 -- true
	assert_stderr --partial "TLS: certificate not trusted"

	# mutual TLS from the environment: a cert and a key, or one PEM with both
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/client.crt RLOCK_CERT_KEY=$CERTS/client.key \
		run -0 "$RLOCK" -u "$M_URL" run e2 -- true
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/client.pem run -0 "$RLOCK" -u "$M_URL" run e2 -- true
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/untrusted.crt RLOCK_CERT_KEY=$CERTS/untrusted.key \
		run -0 "$RLOCK" -u "$M_URL" "${MTLS[@]}" run e2 -- true
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/client.crt RLOCK_CERT_KEY=$CERTS/client.key \
		run -69 --separate-stderr "$RLOCK" -u "$M_URL" --cert "$CERTS/untrusted.crt" \
		--key "$CERTS/untrusted.key" run e2 -- true
	assert_stderr --partial "TLS: the server rejected our client certificate"
	# Three runs got the lock on M, the refused one none.
	assert_equal "$(hist_count e2 acquired M)" 3
	assert_fence "$(meta e2 fence M)" $((c + 1))
}

@test "RLOCK_KEY, the lock's key that run gives its command, is not read as a TLS key" {
	# a nested rlock over mutual TLS inherits RLOCK_KEY=<the outer lock's key>
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/client.pem run -0 --separate-stderr \
		"$RLOCK" -u "$M_URL" run outer -- "$RLOCK" -u "$M_URL" run inner -- sh -c 'echo "$RLOCK_KEY"'
	assert_equal "$stderr" ""
	assert_output "$(key inner)"
	RLOCK_CACERT=$CA RLOCK_CERT=$CERTS/client.pem RLOCK_KEY=/nonexistent run -0 \
		"$RLOCK" -u "$M_URL" run nk -- true
	RLOCK_CACERT=$CA RLOCK_KEY=/nonexistent run -0 "$RLOCK" run nk -- true
}

@test "--cacertdir: a hashed directory of CA certificates" {
	mkdir cadir
	cp "$CA" cadir/
	openssl rehash cadir 2>/dev/null || c_rehash cadir >/dev/null
	run -0 --separate-stderr "$RLOCK" --cacertdir cadir run cd -- true
	assert_equal "$stderr" ""
	mkdir emptydir
	run -69 --separate-stderr "$RLOCK" --cacertdir emptydir run cd -- true
	assert_stderr --partial "TLS: certificate not trusted"
}

@test "without the server's CA: 69, certificate not trusted, and a hint" {
	run -69 --separate-stderr "$RLOCK" acquire nt
	assert_stderr --regexp "^rlock: acquire: localhost:$T_PORT: TLS: certificate not trusted: .+ \(give its CA with --cacert\)$"
	assert_output ""
	# a CA that did not sign it
	run -69 --separate-stderr "$RLOCK" --cacert "$CERTS/untrusted.crt" run nt -- touch ran
	assert_stderr --regexp "^rlock: run: localhost:$T_PORT: TLS: certificate not trusted: .+ \(give its CA with --cacert\)$"
	[[ ! -e ran ]]
	tlock_free nt
}

@test "--insecure skips the chain and the name; -v warns once" {
	run -0 --separate-stderr "$RLOCK" --insecure run in -- true
	assert_equal "$stderr" ""
	run -0 --separate-stderr "$RLOCK" --insecure -u "$W_URL" run in -- true
	assert_equal "$stderr" ""
	run -0 --separate-stderr "$RLOCK" -v --insecure run in -- true
	assert_stderr_line "rlock: run: warning: --insecure: the server's certificate is not verified"
	assert_equal "$(grep -c -- '--insecure' <<<"$stderr")" 1
	run -0 --separate-stderr "$RLOCK" -v --insecure acquire in
	assert_stderr_line "rlock: acquire: warning: --insecure: the server's certificate is not verified"
	assert_equal "$(tholder in)" "$output"
}

@test "rediss://127.0.0.1 is verified against the certificate's IP address" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "rediss://127.0.0.1:$T_PORT" acquire ip
	assert_equal "$stderr" ""
	assert_equal "$(tholder ip)" "$output"
}

@test "a certificate for another name: 69 naming both; --sni NAME accepts it" {
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$W_URL" run wn -- touch ran
	assert_stderr "rlock: run: localhost:$W_PORT: TLS: certificate is for wrong.example, not localhost (use --sni NAME or fix the certificate)"
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "rediss://127.0.0.1:$W_PORT" acquire wn
	assert_stderr "rlock: acquire: 127.0.0.1:$W_PORT: TLS: certificate is for wrong.example, not 127.0.0.1 (use --sni NAME or fix the certificate)"
	[[ ! -e ran ]]
	tlock_free wn W

	run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "$W_URL" --sni wrong.example run wn -- true
	assert_equal "$stderr" ""
	run -0 "$RLOCK" --cacert "$CA" -u "rediss://127.0.0.1:$W_PORT" --sni wrong.example acquire wn
	assert_equal "$(tholder wn W)" "$output"
	# --sni is checked too: every name of the certificate is listed
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" --sni wrong.example acquire wn
	assert_stderr "rlock: acquire: localhost:$T_PORT: TLS: certificate is for localhost, 127.0.0.1, not wrong.example (use --sni NAME or fix the certificate)"
}

# ---- mutual TLS -----------------------------------------------------------

@test "mutual TLS: without a client certificate, 69 and what to give" {
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" run mt -- touch ran
	assert_stderr "rlock: run: localhost:$M_PORT: TLS: the server requires a client certificate (--cert, --key)"
	[[ ! -e ran ]]
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" status mt
	assert_stderr "rlock: status: localhost:$M_PORT: TLS: the server requires a client certificate (--cert, --key)"
}

@test "mutual TLS: --cert and --key, or --cert with both in one PEM" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" "${MTLS[@]}" run -t 300ms mt -- sleep 0.5
	assert_equal "$stderr" ""
	local token
	token=$("$RLOCK" --cacert "$CA" -u "$M_URL" --cert "$CERTS/client.pem" acquire mt)
	assert_equal "$(tholder mt M)" "$token"
	run -0 "$RLOCK" --cacert "$CA" -u "$M_URL" --cert "$CERTS/client.pem" status mt
	run -0 "$RLOCK" --cacert "$CA" -u "$M_URL" --cert "$CERTS/client.pem" release mt "$token"
	tlock_free mt M
}

@test "--key without --cert is a usage error" {
	run -64 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" --key "$CERTS/client.key" acquire mk
	assert_usage acquire "rlock: acquire: --key needs --cert"
	RLOCK_CERT_KEY=$CERTS/client.key run -64 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" run mk -- true
	assert_usage run "rlock: run: --key needs --cert"
}

@test "a key that does not match the certificate, or a certificate the server does not trust: 69" {
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" \
		--cert "$CERTS/client.crt" --key "$CERTS/other.key" run mk -- touch ran
	assert_stderr "rlock: run: TLS: --key $CERTS/other.key does not match --cert $CERTS/client.crt"
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$M_URL" \
		--cert "$CERTS/untrusted.crt" --key "$CERTS/untrusted.key" run mk -- touch ran
	assert_stderr --regexp "^rlock: run: localhost:$M_PORT: TLS: the server rejected our client certificate \(.+\)$"
	[[ ! -e ran ]]
	tlock_free mk M
}

@test "an encrypted client key is refused with a clear line, no passphrase prompt" {
	run -69 --separate-stderr timeout 10 "$RLOCK" --cacert "$CA" -u "$M_URL" \
		--cert "$CERTS/client.crt" --key "$CERTS/client-enc.key" run ek -- touch ran </dev/null
	assert_stderr "rlock: run: TLS: --key $CERTS/client-enc.key is encrypted and rlock reads no passphrase (decrypt it with openssl pkey)"
	[[ ! -e ran ]]
	# the same key inside the --cert file
	cat "$CERTS/client.crt" "$CERTS/client-enc.key" >enc.pem
	run -69 --separate-stderr timeout 10 "$RLOCK" --cacert "$CA" -u "$M_URL" --cert enc.pem acquire ek </dev/null
	assert_stderr "rlock: acquire: TLS: --cert enc.pem is encrypted and rlock reads no passphrase (decrypt it with openssl pkey)"
	tlock_free ek M
}

@test "a missing --cacert, --cacertdir, --cert or --key: 64 naming the option and the file" {
	local no=$BATS_TEST_TMPDIR/missing
	run -64 --separate-stderr "$RLOCK" --cacert "$no/ca.crt" run mf -- touch ran
	assert_stderr "rlock: run: cannot read --cacert $no/ca.crt: No such file or directory"
	run -64 --separate-stderr "$RLOCK" --cacertdir "$no/dir" acquire mf
	assert_stderr "rlock: acquire: cannot read --cacertdir $no/dir: No such file or directory"
	run -64 --separate-stderr "$RLOCK" --cacert "$CA" --cert "$no/c.crt" -u "$M_URL" acquire mf
	assert_stderr "rlock: acquire: cannot read --cert $no/c.crt: No such file or directory"
	run -64 --separate-stderr "$RLOCK" --cacert "$CA" --cert "$CERTS/client.crt" --key "$no/c.key" \
		-u "$M_URL" status mf
	assert_stderr "rlock: status: cannot read --key $no/c.key: No such file or directory"
	RLOCK_CACERT=$no/env.crt run -64 --separate-stderr "$RLOCK" acquire mf
	assert_stderr "rlock: acquire: cannot read --cacert $no/env.crt: No such file or directory"
	[[ ! -e ran ]]
	# readable, but not a certificate
	run -69 --separate-stderr "$RLOCK" --cacert "$CERTS/ca.key" acquire mf
	assert_stderr --regexp "^rlock: acquire: TLS: cannot load --cacert $CERTS/ca\.key: .+$"
	tlock_free mf
}

@test "TLS options are ignored for plain URLs" {
	run -0 --separate-stderr "$RLOCK" -u "$B_PLAIN_URL" --cacert "$BATS_TEST_TMPDIR/missing" \
		--key "$BATS_TEST_TMPDIR/missing" run pl -- true
	assert_equal "$stderr" ""
	RLOCK_CACERT=$BATS_TEST_TMPDIR/missing run -0 "$RLOCK" -u "$B_PLAIN_URL" run pl -- true
}

# ---- passwords --------------------------------------------------------------

@test "requirepass over TLS: from REDISCLI_AUTH or --password-file; a wrong one is 69" {
	# With the fences ahead of the clock, every grant is above c.
	local c
	c=$(fence_ahead pw P)
	REDISCLI_AUTH=s3cret run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "$P_URL" run pw -- true
	assert_equal "$stderr" ""
	printf 's3cret\n' >pwfile
	run -0 "$RLOCK" --cacert "$CA" -u "$P_URL" --password-file pwfile run pw -- true
	run -0 "$RLOCK" --cacert "$CA" -u "rediss://:s3cret@localhost:$P_PORT" run pw -- true
	REDISCLI_AUTH=wrong run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$P_URL" run pw -- true
	assert_stderr --regexp "^rlock: run: localhost:$P_PORT: authentication failed: WRONGPASS"
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "$P_URL" run pw -- true
	assert_stderr --partial "localhost:$P_PORT"
	# Three runs got the lock, the two refused ones none.
	assert_equal "$(hist_count pw acquired P)" 3
	assert_fence "$(meta pw fence P)" $((c + 1))
}

@test "an ACL user and password in a rediss:// URL" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "rediss://locker:pw1@localhost:$P_PORT" run acl -- true
	assert_equal "$stderr" ""
	local token
	token=$("$RLOCK" --cacert "$CA" -u "rediss://locker:pw1@localhost:$P_PORT" acquire acl)
	assert_equal "$(tholder acl P)" "$token"
	run -69 --separate-stderr "$RLOCK" --cacert "$CA" -u "rediss://locker:nope@localhost:$P_PORT" release acl "$token"
	assert_stderr --partial "WRONGPASS"
	run -0 "$RLOCK" --cacert "$CA" -u "rediss://locker:pw1@localhost:$P_PORT" release acl "$token"
	tlock_free acl P
}

# ---- the wrong scheme ---------------------------------------------------------

@test "rediss:// to a plain port: 69 within the connect timeout, no hang" {
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 20 "$RLOCK" --cacert "$CA" --connect-timeout 1s \
		-u "rediss://127.0.0.1:$B_PLAIN_PORT" run ws -- touch ran
	el=$(($(now_ms) - t0))
	assert_stderr --regexp "^rlock: run: 127\.0\.0\.1:$B_PLAIN_PORT: TLS: (no TLS handshake within 1(\.0)?s \(is it a plain port\? use redis://\)|the server answered in plain text \(use redis://, not rediss://\))$"
	((el < 10000)) || fail "took ${el}ms"
	[[ ! -e ran ]]
	t0=$(now_ms)
	run -69 --separate-stderr timeout 20 "$RLOCK" --cacert "$CA" --connect-timeout 1s \
		-u "rediss://localhost:$B_PLAIN_PORT" status ws
	el=$(($(now_ms) - t0))
	assert_stderr --regexp "^rlock: status: localhost:$B_PLAIN_PORT: TLS: "
	((el < 10000)) || fail "took ${el}ms"
	# the server is fine afterwards
	run -0 "$RLOCK" -u "$B_PLAIN_URL" run ws -- true
}

@test "redis:// to a TLS port: 69 with the does-it-require-TLS hint" {
	local t0 el
	t0=$(now_ms)
	run -69 --separate-stderr timeout 20 "$RLOCK" --connect-timeout 1s --io-timeout 1s \
		-u "redis://127.0.0.1:$B_PORT" run ws -- touch ran
	el=$(($(now_ms) - t0))
	assert_stderr --regexp "^rlock: run: 127\.0\.0\.1:$B_PORT: .+ \(does it require TLS\? use rediss://\)$"
	((el < 10000)) || fail "took ${el}ms"
	[[ ! -e ran ]]
	run -69 --separate-stderr timeout 20 "$RLOCK" --connect-timeout 1s --io-timeout 1s \
		-u "redis://127.0.0.1:$T_PORT" acquire ws
	assert_stderr --regexp "^rlock: acquire: 127\.0\.0\.1:$T_PORT: .+ \(does it require TLS\? use rediss://\)$"
	# and the TLS port of the same server works with rediss://
	run -0 "$RLOCK" --cacert "$CA" -u "rediss://127.0.0.1:$B_PORT" run ws -- true
}

# ---- every subcommand over TLS --------------------------------------------

@test "run over TLS outlives several renewals of a 300ms lease, then releases" {
	bg_start r "$RLOCK" --cacert "$CA" run -t 300ms rn -- sh -c \
		"echo \"\$RLOCK_TOKEN\" > tok; $(gate "$BATS_TEST_TMPDIR/go")"
	local pid=$BG_PID token t0
	wait_until 5 file_nonempty tok
	token=$(cat tok)
	t0=$(now_ms)
	while (($(now_ms) - t0 < 1500)); do
		[[ $(tholder rn) == "$token" ]] || fail "lost the key after $(($(now_ms) - t0))ms"
		sleep 0.05
	done
	touch go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
	run bg_err r
	assert_output ""
	tlock_free rn
}

@test "a waiter over TLS is woken by the release (pub/sub over TLS)" {
	local token wpid t0 el
	token=$("$RLOCK" --cacert "$CA" acquire -t 30s wk)
	bg_start w "$RLOCK" --cacert "$CA" acquire -w 20s wk
	wpid=$BG_PID
	wait_until 10 thas_waiters wk 1
	t0=$(now_ms)
	"$RLOCK" --cacert "$CA" release wk "$token"
	bg_wait "$wpid" 25
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" 0
	# Not waiting out the holder's 30s lease: woken by the release.
	((el < 5000)) || fail "hand-off took ${el}ms"
	assert_equal "$(tholder wk)" "$(bg_out w)"
}

@test "line policies over TLS: --once-per 30d skips a done period (75), acquire --supersede is replaced by a newer run --supersede, acquire --priority 10 goes before an earlier waiter" {
	export USER=tester
	local host k pid since until token t0 el opid npid hpid lpid htoken
	host=$(uname -n)
	# --once-per: the second run in the period skips, naming the first.
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" run --once-per 30d daily -- sh -c 'echo "$PPID" > ran1'
	assert_equal "$stderr" ""
	pid=$(cat ran1)
	k=$(key daily)
	assert_equal "$(rcli T HGET "$k:once" pid)" "$pid"
	since=$(rcli T HGET "$k:once" since)
	until=$(rcli T HGET "$k:once" until)
	assert_equal "$until" $(((since / 2592000000 + 1) * 2592000000))
	run -75 --separate-stderr "$RLOCK" --cacert "$CA" run --once-per 30d daily -- touch ran2
	assert_stderr "rlock: run: daily: done this period by tester@$host pid $pid at $(date -u -d "@$((since / 1000))" '+%Y-%m-%d %H:%M:%S UTC'); the next period starts $(date -u -d "@$((until / 1000))" '+%Y-%m-%d %H:%M:%S UTC')"
	[[ ! -e ran2 ]]
	tlock_free daily

	# --supersede: an acquire waiter leaves within a second of a newer
	# run --supersede, which gets the lock from the holder.
	token=$("$RLOCK" --cacert "$CA" acquire -t 30s sup)
	bg_start old "$RLOCK" --cacert "$CA" acquire -w 30s --supersede sup
	opid=$BG_PID
	wait_until 10 line_is sup 1 T
	t0=$(now_ms)
	bg_start new "$RLOCK" --cacert "$CA" run -w 30s --supersede --label deploy-v43 sup -- \
		sh -c 'echo "$RLOCK_TOKEN" > new-ran'
	npid=$BG_PID
	bg_wait "$opid" 5
	el=$(($(now_ms) - t0))
	assert_equal "$BG_STATUS" 75
	((el < 1500)) || fail "the superseded waiter left ${el}ms after the newcomer started"
	assert_equal "$(bg_err old)" "rlock: acquire: sup: superseded by tester@$host:$npid (deploy-v43)"
	assert_equal "$(bg_out old)" ""
	assert_equal "$(tholder sup)" "$token"
	line_is sup 1 T
	assert_equal "$(rcli T HGET "$(key sup):line:who" "$(line_members sup T)" | sed -n 2p)" "$npid"
	[[ ! -e new-ran ]]
	"$RLOCK" --cacert "$CA" release sup "$token"
	bg_wait "$npid" 10
	assert_equal "$BG_STATUS" 0
	[[ $(cat new-ran) =~ ^[0-9a-f]{32}$ ]]
	tlock_free sup

	# --priority: acquire --priority 10, queued after a plain run, is
	# served first; the run gets the lock once it is released.
	token=$("$RLOCK" --cacert "$CA" acquire -t 30s prio)
	bg_start low "$RLOCK" --cacert "$CA" run -w 30s prio -- sh -c 'echo "$RLOCK_TOKEN" > low-ran'
	lpid=$BG_PID
	wait_until 10 line_is prio 1 T
	bg_start high "$RLOCK" --cacert "$CA" acquire -w 30s -t 30s --priority 10 prio
	hpid=$BG_PID
	wait_until 10 line_is prio 2 T
	"$RLOCK" --cacert "$CA" release prio "$token"
	bg_wait "$hpid" 10
	assert_equal "$BG_STATUS" 0
	htoken=$(bg_out high)
	assert_equal "$(tholder prio)" "$htoken"
	line_is prio 1 T
	pid_alive "$lpid"
	[[ ! -e low-ran ]]
	"$RLOCK" --cacert "$CA" release prio "$htoken"
	bg_wait "$lpid" 10
	assert_equal "$BG_STATUS" 0
	[[ $(cat low-ran) =~ ^[0-9a-f]{32}$ && $(cat low-ran) != "$htoken" ]]
	tlock_free prio
	assert_equal "$(rcli T EXISTS "$(key prio):line" "$(key prio):line:lease" "$(key prio):line:who")" 0
}

@test "status over TLS lists 300 held names (SCAN replies of several TLS records)" {
	# ~100-byte keys: one SCAN reply (COUNT 1000) of ~30 KB, two records.
	local long=a-rather-long-lock-name-so-that-one-scan-reply-spans-several-tls-records-
	local k i
	k=$(key @) # no fork per name
	for ((i = 0; i < 300; i++)); do
		printf 'SET %s tok%d PX 120000\n' "${k/@/$long$i}" "$i"
		echo "$long$i" >>want
	done >sets
	rcli T <sets >/dev/null
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" status
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 301
	# (the JSON is bigger than one argument may be: python reads a file)
	"$RLOCK" --cacert "$CA" status --json >status.json
	python3 -c '
import json
d = json.load(open("status.json"))
want = sorted(open("want").read().split())
got = sorted(l["name"] for l in d["locks"])
assert len(want) == 300 and got == want, "names differ: %d vs %d" % (len(got), len(want))
assert all(l["held"] for l in d["locks"])
'
}

@test "acquire --renew over TLS keeps the lease beyond its TTL until release" {
	bg_start sleeper sleep 30
	local token t0
	token=$(timeout 10 "$RLOCK" --cacert "$CA" acquire --renew --pid "$BG_PID" -t 500ms rr 2>renew.err)
	assert_regex "$token" '^[0-9a-f]{32}$'
	t0=$(now_ms)
	while (($(now_ms) - t0 < 1600)); do
		[[ $(tholder rr) == "$token" ]] || fail "lost the key after $(($(now_ms) - t0))ms"
		sleep 0.05
	done
	[[ -n $(rlock_pids) ]] || fail "no renewer process"
	run -0 "$RLOCK" --cacert "$CA" release rr "$token"
	tlock_free rr
	wait_until 5 no_rlock_pids
	assert_equal "$(cat renew.err)" ""
}

@test "the TLS server killed during a run: the command is stopped, 76" {
	start_redis_tls K
	bg_start r "$RLOCK" -u "$K_URL" --cacert "$CA" --connect-timeout 200ms --io-timeout 200ms \
		run -t 1s away -- sh -c 'echo $$ > child.pid; exec sleep 60'
	local pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	tlock_held away K
	kill -KILL "$K_PID"
	wait_until 5 pid_gone "$K_PID"
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 76
	run bg_err r
	assert_output --partial "rlock: run: away: lock lost"
	wait_until 5 pid_gone "$(cat child.pid)"
}

@test "a waiter over TLS keeps waiting through a kill -9 and restart of the server" {
	start_redis_tls K
	"$RLOCK" -u "$K_URL" --cacert "$CA" acquire -t 30s wr >/dev/null
	bg_start w "$RLOCK" -u "$K_URL" --cacert "$CA" run -w 20s wr -- echo got-it
	local pid=$BG_PID
	wait_until 5 thas_waiters wr 1 K
	# The restart (same certificates) drops the waiter's TLS connections
	# and, without persistence, the holder's key: the waiter takes the lock.
	kill -KILL "$K_PID"
	wait_until 5 pid_gone "$K_PID"
	restart_redis K
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_out w)" got-it
}

@test "TLS through a TCP proxy; a blackhole in the handshake or during a hold is bounded" {
	start_proxy X "$T_PORT"
	local url="rediss://localhost:$X_PORT" t0 el pid
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" -u "$url" run px -- true
	assert_equal "$stderr" ""
	# nothing gets through: the handshake is bounded by --connect-timeout
	proxy_cmd X hold both
	t0=$(now_ms)
	run -69 --separate-stderr timeout 20 "$RLOCK" --cacert "$CA" -u "$url" --connect-timeout 1s acquire px
	el=$(($(now_ms) - t0))
	assert_stderr --regexp "^rlock: acquire: localhost:$X_PORT: TLS: "
	((el < 10000)) || fail "took ${el}ms"
	proxy_cmd X normal
	# a blackhole after the handshake: the renewals time out, 76
	bg_start r "$RLOCK" --cacert "$CA" -u "$url" --io-timeout 300ms run -t 1s px -- sh -c \
		'echo $$ > child.pid; exec sleep 60'
	pid=$BG_PID
	wait_until 5 file_nonempty child.pid
	track_pid "$(cat child.pid)"
	tlock_held px
	proxy_cmd X hold both
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 76
	run bg_err r
	assert_output --partial "rlock: run: px: lock lost"
	wait_until 5 pid_gone "$(cat child.pid)"
}

@test "bench over TLS: no errors, no violations" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" bench -c 20 -d 1s --no-ping --json
	json_check "$output" \
		'd["clients"] == 20' \
		'd["cycles"] > 0' \
		'd["errors"]["total"] == 0' \
		'd["violations"]["total"] == 0'
	[[ -z $(rcli T --scan --pattern "${RLOCK_PREFIX}*") ]] || fail "bench left keys behind"
}

@test "Redlock over three TLS servers: acquire, status, run, release" {
	# T, B's TLS port and M (which wants our client certificate)
	local urls=(-u "$T_URL" -u "$B_URL" -u "$M_URL") token s
	local tls=(--cacert "$CA" "${MTLS[@]}")
	token=$("$RLOCK" "${tls[@]}" "${urls[@]}" acquire rl)
	for s in T B M; do
		assert_equal "$(tholder rl $s)" "$token"
	done
	# status shows each master's view, over TLS; a fourth that is down
	# (nothing listens on port 1) is an error line, not a failure
	run -0 --separate-stderr "$RLOCK" "${tls[@]}" "${urls[@]}" -u rediss://localhost:1 status rl
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 6
	# The fence shown is the highest the masters have: the one handed out.
	local f=0 g
	for s in T B M; do
		g=$(meta rl fence "$s")
		assert_fence "$g"
		((g > f)) && f=$g
	done
	assert_status_row "${lines[1]}" rl held "$f"
	assert_regex "${lines[2]}" "^  localhost:$T_PORT +held +ttl [0-9.]+m?s  ${token:0:8} "
	assert_regex "${lines[3]}" "^  localhost:$B_PORT +held +ttl [0-9.]+m?s  ${token:0:8} "
	assert_regex "${lines[4]}" "^  localhost:$M_PORT +held +ttl [0-9.]+m?s  ${token:0:8} "
	assert_regex "${lines[5]}" '^  localhost:1 +error +.*cannot connect'
	run -0 --separate-stderr "$RLOCK" "${tls[@]}" "${urls[@]}" -u rediss://localhost:1 status --json rl
	json_check "$output" \
		"[s['addr'] for s in d['locks'][0]['servers']] == ['localhost:$T_PORT', 'localhost:$B_PORT', 'localhost:$M_PORT', 'localhost:1']" \
		"all(s['held'] is True and s['token_prefix'] == '${token:0:8}' for s in d['locks'][0]['servers'][:3])" \
		'd["locks"][0]["servers"][3]["held"] is None and d["locks"][0]["servers"][3]["error"]'
	run -75 "$RLOCK" "${tls[@]}" "${urls[@]}" run -n rl -- touch ran
	[[ ! -e ran ]]
	run -0 "$RLOCK" "${tls[@]}" "${urls[@]}" release rl "$token"
	for s in T B M; do
		tlock_free rl $s
	done
	run -0 --separate-stderr "$RLOCK" "${tls[@]}" "${urls[@]}" run -t 300ms rl -- sleep 0.5
	assert_equal "$stderr" ""
	# with the dead fourth master, 3 of 4 are still a quorum
	run -0 "$RLOCK" "${tls[@]}" "${urls[@]}" -u rediss://localhost:1 run rl -- true
}

@test "Redlock over mixed plain and TLS servers" {
	local urls=(-u "$T_URL" -u "$M_URL" -u "$B_PLAIN_URL") token
	token=$("$RLOCK" --cacert "$CA" "${MTLS[@]}" "${urls[@]}" acquire mx)
	assert_equal "$(tholder mx T)" "$token"
	assert_equal "$(tholder mx M)" "$token"
	assert_equal "$(redis-cli -p "$B_PLAIN_PORT" GET "$(key mx)")" "$token"
	run -0 "$RLOCK" --cacert "$CA" "${MTLS[@]}" "${urls[@]}" release mx "$token"
	tlock_free mx T
	tlock_free mx M
}

# ---- the history over TLS ---------------------------------------------------

@test "history over TLS: run records, log and last --prometheus read it, log -f follows it until SIGINT" {
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" run job -- true
	assert_equal "$stderr" ""
	assert_equal "$(hist_names job T)" "acquired released"
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" log job
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" ' acquired .* fence [0-9]+ .*waited [0-9]'
	assert_regex "${lines[1]}" ' released .* held [0-9.]+m?s +exit 0$'
	run -0 --separate-stderr "$RLOCK" --cacert "$CA" last --prometheus job
	assert_equal "$stderr" ""
	assert_line 'rlock_last_run_exit_code{lock="job"} 0'
	assert_line --regexp '^rlock_last_success_timestamp_seconds\{lock="job"\} [0-9]+\.[0-9]{3}$'
	# -f prints what is there, then each new event, until SIGINT: exit 0.
	bg_start follow "$RLOCK" --cacert "$CA" log -f job
	local fpid=$BG_PID
	wait_until 5 lines_at_least "$BATS_TEST_TMPDIR/follow.out" 2
	run -3 "$RLOCK" --cacert "$CA" run job -- sh -c 'exit 3'
	wait_until 5 lines_at_least "$BATS_TEST_TMPDIR/follow.out" 4
	kill -INT "$fpid"
	bg_wait "$fpid" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err follow)" ""
	run cat follow.out
	assert_equal "${#lines[@]}" 4
	assert_regex "${lines[2]}" ' acquired .*sh -c exit 3$'
	assert_regex "${lines[3]}" ' released .* exit 3$'
	assert_equal "$(hist_len job T)" 4
}

# ---- libssl only for TLS ----------------------------------------------------

@test "a plain run never maps libssl; a rediss:// run does" {
	bg_start plain "$RLOCK" -u "$B_PLAIN_URL" run lp -- sh -c \
		"echo x > started; $(gate "$BATS_TEST_TMPDIR/go")"
	local pid=$BG_PID
	wait_until 5 file_nonempty started
	! maps_libssl "$pid" || fail "a plain run maps libssl"
	! maps_libcrypto "$pid" || fail "a plain run maps libcrypto"
	touch go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0

	rm -f started go
	bg_start tls "$RLOCK" --cacert "$CA" run lt -- sh -c \
		"echo x > started; $(gate "$BATS_TEST_TMPDIR/go")"
	pid=$BG_PID
	wait_until 5 file_nonempty started
	maps_libssl "$pid" || fail "a rediss:// run does not map libssl"
	touch go
	bg_wait "$pid" 10
	assert_equal "$BG_STATUS" 0
}

@test "over TLS a set of locks (--with) waits, is woken by the release and taken whole" {
	local token
	token=$("$RLOCK" --cacert "$CA" acquire -t 30s tw2)
	bg_start w "$RLOCK" --cacert "$CA" run -w 20s tw1 --with tw2 -- sh -c 'echo "$RLOCK_LOCKS" > set.ran'
	wait_until 10 eval '[[ $(rcli T ZCARD "$(key tw2):line") == 1 ]]'
	tlock_free tw1
	run -0 "$RLOCK" --cacert "$CA" release tw2 "$token"
	bg_wait "$BG_PID" 10
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat set.ran)" 2
	tlock_free tw1
	tlock_free tw2
}

@test "tls: a server that takes the connection and leaves the handshake unanswered is a wait within -w (a herd's), not a failure" {
	# Stopped, the server's kernel still accepts: no handshake comes.
	kill -STOP "$T_PID"
	bg_start w "$RLOCK" -u "$T_URL" --cacert "$CA" --connect-timeout 300ms \
		run -w 30s --progress 1s hs -- sh -c 'echo ran >hs.ran'
	local pid=$BG_PID
	wait_until 10 grep -q "no TLS handshake within 300ms" w.err
	kill -CONT "$T_PID"
	bg_wait "$pid" 15
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat hs.ran)" ran
	run -0 grep -c "rlock: run: waiting [^ ]* for hs: trying again: localhost:$T_PORT: TLS: no TLS handshake within 300ms" w.err
	# Without -w, as for a server that is gone: 69 at once.
	kill -STOP "$T_PID"
	run -69 --separate-stderr "$RLOCK" -u "$T_URL" --cacert "$CA" --connect-timeout 300ms run hs -- touch hs2.ran
	kill -CONT "$T_PID"
	[[ ! -e hs2.ran ]]
	assert_regex "$stderr" "TLS: no TLS handshake within 300ms"
}
