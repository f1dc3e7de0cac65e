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
#	restart_redis_tls NAME	stop it and start it again on the same ports
#	tcli NAME args...	redis-cli --tls (CA and client cert, and the
#				server's --requirepass) against it
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

# _tls_cli DIR args...: redis-cli over TLS against the server in DIR, with
# the CA and the client certificate (accepted by every auth-clients mode).
_tls_cli() {
	local dir=$1
	shift
	local -a conn=(--tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt"
		--key "$CERTS/client.key" -h 127.0.0.1 -p "$(cat "$dir/port")")
	if [[ -f $dir/pass ]]; then
		conn+=(-a "$(cat "$dir/pass")")
	fi
	env -u REDISCLI_AUTH timeout 10 redis-cli "${conn[@]}" --no-auth-warning "$@"
}

# True when the TLS server answering in DIR is the process we started.
_tls_server_up() {
	local dir=$1 pid info
	pid=$(cat "$dir/pid")
	pid_gone "$pid" && return 0 # let the caller notice
	info=$(_tls_cli "$dir" INFO server 2>/dev/null) || return 1
	[[ $info == *"process_id:$pid"* ]]
}

# _tls_spawn DIR: start the server DIR describes (args, port, maybe
# plainport); 0 when up, 1 when it died (a port was taken), 2 when it
# never answered.  As test_helper's _rl_spawn_redis, over TLS.
_tls_spawn() {
	local dir=$1 pid plain=0
	local -a args
	mapfile -t args <"$dir/args"
	[[ -f $dir/plainport ]] && plain=$(cat "$dir/plainport")
	: >"$dir/log"
	env -u RLOCK_PREFIX redis-server --save '' --appendonly no --dir "$dir" --daemonize no \
		--pidfile "$dir/redis.pid" --logfile "$dir/log" \
		--bind 127.0.0.1 --port "$plain" --tls-port "$(cat "$dir/port")" \
		--tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" \
		--tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients optional \
		"${args[@]}" </dev/null >>"$dir/log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	wait_until 5 _tls_server_up "$dir" 2>/dev/null || {
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 2
	}
	if pid_gone "$pid"; then
		wait "$pid" 2>/dev/null
		return 1
	fi
	return 0
}

_tls_export() {
	local name=$1 dir=$2 port
	port=$(cat "$dir/port")
	export "${name}_DIR=$dir"
	export "${name}_PID=$(cat "$dir/pid")"
	export "${name}_PORT=$port"
	export "${name}_ADDR=127.0.0.1:$port"
	export "${name}_URL=rediss://localhost:$port"
	if [[ -f $dir/plainport ]]; then
		export "${name}_PLAIN_PORT=$(cat "$dir/plainport")"
		export "${name}_PLAIN_URL=redis://127.0.0.1:$(cat "$dir/plainport")"
	fi
}

# A port in 20000-31999 (below the ephemeral range, never 6379), as
# start_redis picks them.
_tls_random_port() {
	echo $((20000 + (RANDOM * 32768 + RANDOM) % 12000))
}

# _tls_start PLAIN NAME [args...]
_tls_start() {
	local plain=$1 name=$2 dir try port
	shift 2
	tls_make_certs || return 1
	dir=$(_rl_server_dir "$name")
	_rl_save_args "$dir" "$@"
	rm -f "$dir/plainport"
	for ((try = 0; try < 20; try++)); do
		port=$(_tls_random_port)
		echo "$port" >"$dir/port"
		if ((plain)); then
			local pp
			pp=$(_tls_random_port)
			((pp == port)) && continue
			echo "$pp" >"$dir/plainport"
		fi
		if _tls_spawn "$dir"; then
			_tls_export "$name" "$dir"
			return 0
		fi
		[[ $? -eq 2 ]] && break
	done
	echo "start_redis_tls $name: could not start redis-server; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# start_redis_tls NAME [redis-server args...]
start_redis_tls() {
	_tls_start 0 "$@"
}

# start_redis_tls_plain NAME [redis-server args...]
start_redis_tls_plain() {
	_tls_start 1 "$@"
}

# restart_redis_tls NAME: stop it, start it again on the same ports with the
# same arguments (and no data).
restart_redis_tls() {
	local name=$1 dir try
	dir=$(_rl_dir_of "$name") || return 1
	_rl_stop_dir "$dir"
	for ((try = 0; try < 10; try++)); do
		if _tls_spawn "$dir"; then
			_tls_export "$name" "$dir"
			return 0
		fi
	done
	echo "restart_redis_tls $name: could not start redis-server again; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# tcli NAME args...: redis-cli over TLS against server NAME.
tcli() {
	local dir
	dir=$(_rl_dir_of "$1") || return 1
	shift
	_tls_cli "$dir" "$@"
}

# ---- locks on a TLS server ------------------------------------------------

tholder() {
	tcli "${2:-T}" GET "$(key "$1")"
}

tpttl() {
	tcli "${2:-T}" PTTL "$(key "$1")"
}

tlock_held() {
	[[ $(tcli "${2:-T}" EXISTS "$(key "$1")") == 1 ]]
}

tlock_free() {
	[[ $(tcli "${2:-T}" EXISTS "$(key "$1")") == 0 ]]
}

# thas_waiters NAME N [SERVER]: at least N subscribers of NAME's release
# channel (how rlock waits).
thas_waiters() {
	local n
	n=$(tcli "${3:-T}" PUBSUB NUMSUB "$(key "$1"):released" | sed -n 2p)
	[[ -n $n ]] && ((n >= $2))
}

# maps_libssl PID: the process has libssl mapped.
maps_libssl() {
	grep -q 'libssl\.so' "/proc/$1/maps"
}

# maps_libcrypto PID
maps_libcrypto() {
	grep -q 'libcrypto\.so' "/proc/$1/maps"
}
