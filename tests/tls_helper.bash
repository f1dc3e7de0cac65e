# tls_helper.bash - certificates and TLS redis-servers for the TLS suite.
# Load it after test_helper:
#
#	load test_helper
#	load tls_helper
#
# Certificates (EC P-256, made once per file in $CERTS by tls_make_certs,
# which start_redis_tls calls itself):
#	ca.crt/.key		the test CA
#	server.crt/.key		localhost and 127.0.0.1 (serverAuth)
#	client.crt/.key		rlock-client (clientAuth); client.pem has both
#	wrongname.crt/.key	a server cert for wrong.example only
#	untrusted.crt/.key	self-signed, chains to nothing we trust
#	other.key		a key that does not match client.crt
#	client-enc.key		client.key encrypted (passphrase "secret")
#
# Servers (files, pid and arguments in the server dir like start_redis's;
# stopped by PID by rl_teardown/rl_teardown_file like every other server):
#	start_redis_tls NAME [redis-server args...]
#		TLS only (--port 0 --tls-port P) on a free 127.0.0.1 port, the
#		server cert, the CA for clients, --tls-auth-clients optional;
#		the args come last and override any of these.  Exports
#		NAME_PORT, NAME_PID, NAME_DIR, NAME_ADDR=127.0.0.1:P and
#		NAME_URL=rediss://localhost:P
#	start_redis_tls_plain NAME [args...]
#		the same plus a plain port: also NAME_PLAIN_PORT and
#		NAME_PLAIN_URL=redis://127.0.0.1:PP
#	restart_redis, stop_redis and rcli (redis-cli --tls with the CA and
#	the client certificate) work on them as on any server
# Locks on a TLS server (SERVER defaults to T):
#	tholder NAME [SERVER], tpttl NAME [SERVER], tlock_held NAME [SERVER],
#	tlock_free NAME [SERVER], thas_waiters NAME N [SERVER]
#	maps_libssl PID		PID's memory maps name libssl

CERTS=$BATS_FILE_TMPDIR/tls

# ---- certificates ---------------------------------------------------------

# _tls_req NAME SUBJECT: a P-256 key and a signing request.
_tls_req() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "$2" -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null
}

# _tls_signed NAME SAN EKU: a certificate for NAME signed by the test CA.
_tls_signed() {
	local name=$1 san=$2 eku=$3
	_tls_req "$name" "/CN=$name" || return 1
	printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$san" "$eku" >"$CERTS/$name.ext"
	openssl x509 -req -in "$CERTS/$name.csr" -CA "$CERTS/ca.crt" \
		-CAkey "$CERTS/ca.key" -CAcreateserial -days 2 \
		-extfile "$CERTS/$name.ext" -out "$CERTS/$name.crt" 2>/dev/null
}

# _tls_self NAME: a self-signed certificate (and key).
_tls_self() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$1" -keyout "$CERTS/$1.key" -out "$CERTS/$1.crt" 2>/dev/null
}

# tls_make_certs: every certificate above, once per file.
tls_make_certs() {
	[[ -f $CERTS/.done ]] && return 0
	mkdir -p "$CERTS"
	{
		_tls_self ca &&
			_tls_signed server 'DNS:localhost,IP:127.0.0.1' serverAuth &&
			_tls_signed client 'DNS:rlock-client' clientAuth &&
			_tls_signed wrongname 'DNS:wrong.example' serverAuth &&
			_tls_self untrusted &&
			openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
				-out "$CERTS/other.key" 2>/dev/null &&
			openssl pkey -in "$CERTS/client.key" -aes256 -passout pass:secret \
				-out "$CERTS/client-enc.key" 2>/dev/null &&
			cat "$CERTS/client.crt" "$CERTS/client.key" >"$CERTS/client.pem"
	} || {
		echo "tls_make_certs: openssl failed" >&2
		return 1
	}
	chmod 600 "$CERTS"/*.key "$CERTS/client.pem"
	: >"$CERTS/.done"
}

# ---- servers --------------------------------------------------------------

# test_helper starts, restarts, stops and queries them: a "tls" file in the
# server's dir names the certificates (and makes rcli speak TLS), a
# "wantplain" file asks for a plain port too.

# _tls_start PLAIN NAME [args...]
_tls_start() {
	local plain=$1 name=$2 dir
	shift 2
	tls_make_certs || return 1
	dir=$(_rl_server_dir "$name")
	echo "$CERTS" >"$dir/tls"
	if ((plain)); then
		: >"$dir/wantplain"
	else
		rm -f "$dir/wantplain"
	fi
	_rl_save_args "$dir" "$@"
	if ! _rl_start_tcp "$name" "$dir" 2>"$dir/start.err"; then
		if tls_missing "$dir/log"; then
			echo "start_redis_tls $name: $TLS_MISSING" >&2
		else
			cat "$dir/start.err" >&2
		fi
		return 1
	fi
}

# tls_missing LOG: whether the server that wrote LOG would not start for
# want of TLS (built without it: Valkey's BUILD_TLS=no, as
# ../shared/valkey/build.sh builds it, or a Redis without BUILD_TLS).  Then
# exports TLS_MISSING, the one line a TLS test fails with on that server:
# it cannot pass there, and is not skipped (a skip would look like a pass).
tls_missing() {
	grep -q 'Failed finding TLS support' "$1" 2>/dev/null || return 1
	TLS_MISSING="this redis-server ($(redis-server --version | cut -d' ' -f1-3)) has no TLS (built without it): the TLS tests cannot run on it"
	export TLS_MISSING
}

# need_tls: fail the test at once, with that line, on a server without TLS
# (a file whose setup_file went on without its TLS server).
need_tls() {
	[[ -z ${TLS_MISSING:-} ]] || fail "$TLS_MISSING"
}

# start_redis_tls NAME [redis-server args...]
start_redis_tls() {
	_tls_start 0 "$@"
}

# start_redis_tls_plain NAME [redis-server args...]
start_redis_tls_plain() {
	_tls_start 1 "$@"
}

# ---- locks on a TLS server ------------------------------------------------

# test_helper's lock helpers with T as the default server.
tholder() { holder "$1" "${2:-T}"; }
tpttl() { pttl "$1" "${2:-T}"; }
tlock_held() { lock_held "$1" "${2:-T}"; }
tlock_free() { lock_free "$1" "${2:-T}"; }
thas_waiters() { has_waiters "$1" "$2" "${3:-T}"; }

# maps_libssl PID: the process has libssl mapped.
maps_libssl() {
	grep -q 'libssl\.so' "/proc/$1/maps"
}

# maps_libcrypto PID
maps_libcrypto() {
	grep -q 'libcrypto\.so' "/proc/$1/maps"
}
