# private-redis.sh - sourced by tests/demo.sh and the scripts in bench/:
# start a throwaway redis-server on a free 127.0.0.1 port, never 6379, and
# make the certificates a TLS one needs (make_certs).
#
# The caller sets tmp (a private directory) and who (the word its messages
# start with).  start_server sets port and server_pid and returns 0, or
# prints the server's log; stop_server (for the caller's EXIT trap) stops
# it by PID and removes tmp; script_stats reads its scripts' counters.

# poll SECS COMMAND...: run COMMAND every 10ms until it succeeds, for at
# most SECS seconds.
poll() {
	local tries=$(($1 * 100))
	shift
	while ((tries-- > 0)); do
		"$@" && return 0
		sleep 0.01
	done
	return 1
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Up, and the server on the port is the one we started.
ours_up() {
	kill -0 "$server_pid" 2>/dev/null || return 0 # let the caller notice
	[[ $(redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null) == *"process_id:$server_pid"* ]]
}

start_server() {
	local try
	for ((try = 0; try < 20; try++)); do
		# 20000-31999: below the kernel's ephemeral ports, never 6379.
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		listening "$port" && continue
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --daemonize no --dir "$tmp" \
			--logfile "$tmp/redis.log" </dev/null >/dev/null 2>&1 &
		server_pid=$!
		if poll 5 ours_up && kill -0 "$server_pid" 2>/dev/null; then
			return 0
		fi
		# Someone else took the port first: try another.
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		server_pid=
	done
	echo "$who: could not start redis-server; log:" >&2
	cat "$tmp/redis.log" >&2
	return 1
}

# make_certs DIR: an EC P-256 CA (DIR/ca.crt, ca.key) and a server
# certificate it signed for localhost and 127.0.0.1 (DIR/server.crt,
# server.key), valid two days; openssl's words in DIR/openssl.log.
make_certs() {
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-days 2 -subj "/CN=rlock bench CA" -keyout "$1/ca.key" \
			-out "$1/ca.crt" &&
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
				-subj "/CN=localhost" -keyout "$1/server.key" \
				-out "$1/server.csr" &&
			openssl x509 -req -in "$1/server.csr" -CA "$1/ca.crt" \
				-CAkey "$1/ca.key" -CAcreateserial -days 2 \
				-out "$1/server.crt" -extfile <(printf '%s\n' \
				'subjectAltName=DNS:localhost,IP:127.0.0.1' \
				'extendedKeyUsage=serverAuth')
	} >"$1/openssl.log" 2>&1
}

stop_server() {
	if [[ -n ${server_pid:-} ]]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}

# script_stats: the scripts' calls and µs so far on the server (INFO
# commandstats, EVALSHA and EVAL together), as "CALLS USEC".
script_stats() {
	redis-cli -p "$port" INFO commandstats | tr -d '\r' |
		awk -F'[:,=]' '/^cmdstat_eval(sha)?:/ { c += $3; u += $5 } END { print c + 0, u + 0 }'
}

# callgrind_total FILE: the instructions callgrind counted (bench/perf.sh,
# bench/lean.sh).
callgrind_total() {
	callgrind_annotate "$1" 2>/dev/null |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
