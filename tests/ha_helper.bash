# ha_helper.bash - Redis Sentinel and Redis Cluster topologies on loopback
# for the high-availability suites.  Load it after test_helper:
#
#	load test_helper
#	load ha_helper
#
# Every process is an ordinary test_helper server: a directory with its
# pid, port (and password) under the file's (or the test's) servers dir, so
# rcli, stop_redis and rl_teardown_file/rl_teardown work on them and stop
# them by PID.  Start a topology once per file, from setup_file.
#	ha_wait SECS COMMAND...	wait_until polling every 100ms, for the
#				topology's states (each poll asks several
#				processes)
#	port_listening PORT / closed_port	a port something / nothing
#				listens on, on 127.0.0.1
#
# Sentinel (a master, one replica, three sentinels):
#	start_sentinel_topology [--master-pass P] [--sentinel-pass P]
#		start_redis M (--repl-diskless-sync-delay 0), start_redis RPL
#		(--replicaof M, --masterauth P), sentinels S1..S3 watching
#		"mymaster" (quorum 2, down-after 1000ms, failover-timeout 4000ms,
#		resolve-hostnames no, auth-pass P, requirepass P), each with its
#		own writable config file; SENTINEL DEBUG shortens its periods to
#		200ms.  Returns when every sentinel sees the replica with its link
#		up and the two other sentinels.  Exports M_*, RPL_*, S1_PORT..
#		S3_PORT and SENTINEL_URL=redis-sentinel://127.0.0.1:S1,...#mymaster
#	start_sentinel NAME MASTER_PORT [--master-name N] [--quorum Q]
#		[--master-pass P] [--sentinel-pass P] [--tls]
#		one redis-sentinel (what the topology starts three of); exports
#		NAME_PORT, NAME_PID, NAME_DIR, NAME_URL.  --tls (load
#		tls_helper too): TLS only, to its clients and to the master
#		(a start_redis_tls one), with tls_helper's certificates
#	restart_sentinel NAME	start it again on its port with its config
#	sentinels_up		restart any of S1..S3 that a test stopped,
#				thaw any that it froze
#	sentinel_master_port	the master's port as the sentinels name it
#				(the first sentinel that answers)
#	ha_master / ha_replica	M or RPL: whichever is master / replica now
#	mcli ARGS...		redis-cli against the current master
#	sentinel_failover	SENTINEL FAILOVER mymaster, then wait (bounded)
#				until every live sentinel names the other node,
#				it says role master and the old master is its
#				replica with its link up
# After a failover M and RPL have swapped roles: tests that care use
# ha_master/ha_replica and sentinel_master_port, so that the topology never
# needs restarting between tests.
#
# Cluster (three masters, plus one replica each with --replicas):
#	start_cluster [--replicas]
#		nodes C1..C3 (C4..C6) on ports below 55535 whose bus port
#		(+10000) is free too, cluster-node-timeout 1000, made with
#		redis-cli --cluster create ... --cluster-yes; returns when every
#		node says cluster_state:ok, knows every other and agrees on the
#		slot map.  Exports C1_PORT.. (and C1_URL.. as start_redis does),
#		CLUSTER_NODES (their names)
#	ccli PORT ARGS...		redis-cli against a node by port
#	cluster_slot KEY		CLUSTER KEYSLOT
#	cluster_owner_port KEY		the master serving KEY's slot
#	cluster_other_port KEY		a master that does not serve it
#	cluster_master_ports		the masters now, one port a line
#	cluster_replica_port PORT	a replica of the master on PORT
#	cluster_node_id PORT		CLUSTER MYID
#	cluster_node_name PORT		C1.. for a port
#	cluster_migrate_start SLOT FROM TO	SETSLOT IMPORTING on TO,
#						MIGRATING on FROM
#	cluster_migrate_keys SLOT FROM TO	MIGRATE the slot's keys
#	cluster_migrate_finish SLOT TO		SETSLOT NODE on TO, then on
#						every other master; wait until
#						every node agrees
#	cluster_failover REPLICA_PORT	CLUSTER FAILOVER on a replica; wait
#					until it is master, the old master its
#					replica with its link up, the cluster ok
#	cluster_stable			every node: state ok, same slot map
# Locks on a cluster (NAME under this test's prefix: key "P{NAME}"):
#	cholder NAME, clock_held NAME, clock_free NAME, cpttl NAME (on the
#	slot's owner), cwaiters NAME (subscribers of its release channel on
#	every node, summed), chas_waiters NAME N
#	cluster_get KEY...	"PORT VALUE" a key: the master that serves it
#				(answers GET without MOVED) and the value
#	same_slot_name NAME	another lock name whose key is in NAME's slot

# ---- small things ---------------------------------------------------------

# _haprobe OP ARGS...: ha_probe.py, which asks a topology's processes in
# one python process what a poll would otherwise fork dozens of redis-cli
# for.  The system's python directly: a version-manager shim on PATH can
# take a second to start.
_HA_PY=/usr/bin/python3
[[ -x $_HA_PY ]] || _HA_PY=python3
_haprobe() {
	"$_HA_PY" -I -S "$TESTS_DIR/ha_probe.py" "$@"
}

# ha_wait SECS COMMAND [ARG...]: wait_until for the topology's states
# (a failover, a slot map), polled every 100ms: each poll asks several
# processes, and polling those every 20ms for seconds costs thousands of
# forks that the processes under test then lack on a two-core machine.
ha_wait() {
	local secs=$1 end t
	shift
	t=${EPOCHREALTIME/[.,]/}
	end=$((t / 1000 + $(secs_to_ms "$secs")))
	while :; do
		"$@" && return 0
		t=${EPOCHREALTIME/[.,]/}
		((t / 1000 < end)) || break
		sleep 0.1
	done
	echo "ha_wait: gave up after ${secs}s: $*" >&2
	return 1
}

# port_listening PORT: something accepts connections on 127.0.0.1:PORT.
port_listening() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# closed_port: a port in the test range that nothing listens on now.
closed_port() {
	local p
	while :; do
		p=$(_rl_random_port)
		port_listening "$p" || break
	done
	echo "$p"
}

# ---- sentinel ---------------------------------------------------------------

# _ha_sentinel_spawn DIR: start the sentinel described by DIR/sentinel.conf;
# 0 when it answers, 1 when it died (port taken), 2 when it never answered.
_ha_sentinel_spawn() {
	local dir=$1 pid
	: >"$dir/log"
	env -u RLOCK_PREFIX redis-sentinel "$dir/sentinel.conf" --daemonize no \
		--logfile "$dir/log" </dev/null >>"$dir/log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >"$dir/pid"
	wait_until 5 _rl_server_up "$dir" 2>/dev/null || {
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 2
	}
	if pid_gone "$pid"; then
		wait "$pid" 2>/dev/null
		return 1
	fi
	# The default periods (INFO every 10s, hellos every 2s) make a
	# topology take seconds to settle and failovers slow.
	# A sentinel frozen for more than 2s (a test does that) goes into
	# TILT mode on thawing, and starts no failover for tilt-period (30s by
	# default): 3s is enough to let things settle.
	_rl_redis_cli "$dir" SENTINEL DEBUG info-period 200 ping-period 200 \
		ask-period 200 publish-period 200 tilt-period 3000 >/dev/null
}

# start_sentinel NAME MASTER_PORT [--master-name N] [--quorum Q]
#	[--master-pass P] [--sentinel-pass P]
start_sentinel() {
	local name=$1 mport=$2 mname=mymaster quorum=2 mpass= spass= tls=0 dir try port
	shift 2
	while (($#)); do
		case $1 in
		--tls)
			tls=1
			shift
			continue
			;;
		--master-name) mname=$2 ;;
		--quorum) quorum=$2 ;;
		--master-pass) mpass=$2 ;;
		--sentinel-pass) spass=$2 ;;
		*)
			echo "start_sentinel: unknown option $1" >&2
			return 1
			;;
		esac
		shift 2
	done
	dir=$(_rl_server_dir "$name")
	rm -f "$dir/pass" "$dir/tls"
	[[ -n $spass ]] && printf '%s' "$spass" >"$dir/pass"
	if ((tls)); then
		tls_make_certs || return 1
		echo "$CERTS" >"$dir/tls"
	fi
	for ((try = 0; try < 20; try++)); do
		port=$(_rl_random_port)
		echo "$port" >"$dir/port"
		# Sentinel rewrites its config file (myid, known peers): it is
		# the sentinel's own, in its dir.
		{
			if ((tls)); then
				# TLS only, to its clients and to the master (with
				# a client certificate: the server one is for
				# serverAuth only).
				echo "port 0"
				echo "tls-port $port"
				echo "tls-cert-file $CERTS/server.crt"
				echo "tls-key-file $CERTS/server.key"
				echo "tls-ca-cert-file $CERTS/ca.crt"
				echo "tls-auth-clients optional"
				echo "tls-replication yes"
				echo "tls-client-cert-file $CERTS/client.crt"
				echo "tls-client-key-file $CERTS/client.key"
			else
				echo "port $port"
			fi
			echo "bind 127.0.0.1"
			echo "dir $dir"
			echo "pidfile $dir/sentinel.pid"
			echo "sentinel resolve-hostnames no"
			echo "sentinel monitor $mname 127.0.0.1 $mport $quorum"
			echo "sentinel down-after-milliseconds $mname 1000"
			echo "sentinel failover-timeout $mname 4000"
			echo "sentinel parallel-syncs $mname 1"
			[[ -n $mpass ]] && echo "sentinel auth-pass $mname $mpass"
			[[ -n $spass ]] && echo "requirepass $spass"
		} >"$dir/sentinel.conf"
		if _ha_sentinel_spawn "$dir"; then
			_rl_export_server "$name" "$dir"
			return 0
		fi
		[[ $? -eq 2 ]] && break
	done
	echo "start_sentinel $name: could not start redis-sentinel; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# restart_sentinel NAME: start a stopped sentinel again on its port, with
# the config it rewrote (it remembers the current master and its peers).
restart_sentinel() {
	local name=$1 dir try
	dir=$(_rl_dir_of "$name") || return 1
	_rl_stop_dir "$dir"
	for ((try = 0; try < 10; try++)); do
		if _ha_sentinel_spawn "$dir"; then
			_rl_export_server "$name" "$dir"
			return 0
		fi
	done
	echo "restart_sentinel $name: could not start it again; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# The pid of server NAME now (empty when stopped).  No fork: the polls and
# per-test checks call it often, and a fork costs tens of ms on a loaded
# machine.
server_pid() {
	local dir="${1}_DIR" pid=
	[[ -n ${!dir:-} ]] && { read -r pid <"${!dir}/pid"; } 2>/dev/null
	echo "$pid"
}

# _ha_pid_state PID: sets STATE to PID's state letter (empty when gone).
_ha_pid_state() {
	local stat
	STATE=
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
	stat=${stat##*) }
	STATE=${stat%% *}
}

SENTINELS=(S1 S2 S3)

# sentinels_up: thaw the sentinels a test froze, start those it stopped,
# and then wait until each is out of TILT mode and names the same master.  Without a fork
# when all three are running.
sentinels_up() {
	local s pid dir changed=0 STATE
	for s in "${SENTINELS[@]}"; do
		dir="${s}_DIR"
		pid=
		{ read -r pid <"${!dir}/pid"; } 2>/dev/null
		STATE=
		[[ -n $pid ]] && _ha_pid_state "$pid"
		if [[ $STATE == T || $STATE == t ]]; then
			kill -CONT "$pid"
			changed=1
		fi
		if [[ -z $pid || -z $STATE || $STATE == Z || $STATE == X ]]; then
			restart_sentinel "$s" || return 1
			changed=1
		fi
	done
	((changed == 0)) || ha_wait 15 _ha_sentinels_agree
}

_ha_sentinels_agree() {
	local s p first=
	for s in "${SENTINELS[@]}"; do
		[[ $(rcli "$s" INFO sentinel 2>/dev/null) == *sentinel_tilt:0* ]] || return 1
		p=$(rcli "$s" SENTINEL GET-MASTER-ADDR-BY-NAME mymaster 2>/dev/null | sed -n 2p)
		[[ -n $p ]] || return 1
		[[ -z $first ]] && first=$p
		[[ $p == "$first" ]] || return 1
	done
}

# sentinel_master_port: what the first sentinel that answers calls the
# master of mymaster.
sentinel_master_port() {
	local s p
	for s in "${SENTINELS[@]}"; do
		_ha_sentinel_live "$s" || continue
		p=$(rcli "$s" SENTINEL GET-MASTER-ADDR-BY-NAME mymaster 2>/dev/null | sed -n 2p)
		if [[ -n $p ]]; then
			echo "$p"
			return 0
		fi
	done
	echo "sentinel_master_port: no sentinel answered" >&2
	return 1
}

# ha_master / ha_replica: the name (M or RPL) of the data node that the
# sentinels call the master now, and of the other one.
ha_master() {
	local p
	p=$(sentinel_master_port) || return 1
	if [[ $p == "$M_PORT" ]]; then
		echo M
	elif [[ $p == "$RPL_PORT" ]]; then
		echo RPL
	else
		echo "ha_master: the sentinels name port $p" >&2
		return 1
	fi
}

ha_replica() {
	local m
	m=$(ha_master) || return 1
	if [[ $m == M ]]; then echo RPL; else echo M; fi
}

# mcli ARGS...: redis-cli against the current master.
mcli() {
	local m
	m=$(ha_master) || return 1
	rcli "$m" "$@"
}

# _ha_is_replica_of NAME MASTER_PORT: NAME replicates MASTER_PORT, link up.
_ha_is_replica_of() {
	local info
	info=$(rcli "$1" INFO replication 2>/dev/null | tr -d '\r')
	[[ $info == *role:slave* && $info == *"master_port:$2"$'\n'* &&
		$info == *master_link_status:up* ]]
}

# _ha_sentinel_specs [live]: "port[:password]" of each sentinel (only the
# running ones with "live").
_ha_sentinel_specs() {
	local s dir pass
	for s in "${SENTINELS[@]}"; do
		[[ ${1:-} == live ]] && ! _ha_sentinel_live "$s" && continue
		dir="${s}_DIR"
		pass=
		[[ -f ${!dir}/pass ]] && pass=$(<"${!dir}/pass")
		echo "$(<"${!dir}/port")${pass:+:$pass}"
	done
}

# _ha_data_pass: the data nodes' password ("" when none).
_ha_data_pass() {
	local pass=
	[[ -f $M_DIR/pass ]] && pass=$(<"$M_DIR/pass")
	echo "$pass"
}

# _ha_settled MASTER REPLICA: the data nodes and every sentinel agree that
# MASTER (M or RPL) is the master and REPLICA its replica, and the
# sentinels know each other.
_ha_settled() {
	_haprobe sentinel-settled "$(_rl_port_of "$1")" "$(_rl_port_of "$2")" \
		"$(_ha_data_pass)" $(_ha_sentinel_specs) 2>/dev/null
}

_rl_port_of() {
	local dir
	dir=$(_rl_dir_of "$1") || return 1
	cat "$dir/port"
}

# start_sentinel_topology [--master-pass P] [--sentinel-pass P]
start_sentinel_topology() {
	local mpass= spass= s
	local -a margs=(--repl-diskless-sync-delay 0) sargs=()
	while (($#)); do
		case $1 in
		--master-pass) mpass=$2 ;;
		--sentinel-pass) spass=$2 ;;
		*)
			echo "start_sentinel_topology: unknown option $1" >&2
			return 1
			;;
		esac
		shift 2
	done
	if [[ -n $mpass ]]; then
		margs+=(--requirepass "$mpass" --masterauth "$mpass")
		sargs+=(--master-pass "$mpass")
	fi
	[[ -n $spass ]] && sargs+=(--sentinel-pass "$spass")
	start_redis M "${margs[@]}" || return 1
	start_redis RPL "${margs[@]}" --replicaof 127.0.0.1 "$M_PORT" || return 1
	ha_wait 10 _ha_is_replica_of RPL "$M_PORT" || return 1
	for s in "${SENTINELS[@]}"; do
		start_sentinel "$s" "$M_PORT" "${sargs[@]}" || return 1
	done
	export SENTINEL_URL="redis-sentinel://127.0.0.1:$S1_PORT,127.0.0.1:$S2_PORT,127.0.0.1:$S3_PORT#mymaster"
	ha_wait 20 _ha_settled M RPL || {
		echo "start_sentinel_topology: the sentinels did not settle" >&2
		return 1
	}
}

# sentinel_failover: force a failover of mymaster and wait (bounded) until
# every live sentinel names the other node, that node says it is master,
# and the old master replicates it with its link up.  (How the sentinels
# see the new replica settles afterwards: a failover right after another
# retries while they answer -NOGOODSLAVE or -INPROG.)
sentinel_failover() {
	local old new out s t0
	old=$(ha_master) || return 1
	if [[ $old == M ]]; then new=RPL; else new=M; fi
	t0=$(now_ms)
	# A sentinel refuses (-NOGOODSLAVE) until it has fresh news of a
	# replica, and may abort a failover it started when that news goes
	# stale at the wrong moment: ask again until it happens (bounded).
	while :; do
		for s in "${SENTINELS[@]}"; do
			_ha_sentinel_live "$s" || continue
			out=$(rcli "$s" SENTINEL FAILOVER mymaster 2>&1)
			[[ $out == OK || $out == INPROG* ]] && break
		done
		if [[ $out == OK || $out == INPROG* ]]; then
			ha_wait 8 _ha_failed_over "$new" "$old" 2>/dev/null && return 0
		fi
		(($(now_ms) - t0 < 30000)) || break
		sleep 0.1
	done
	echo "sentinel_failover: $new did not become the master (last answer: $out)" >&2
	return 1
}

_ha_sentinel_live() {
	local dir="${1}_DIR" pid= STATE
	{ read -r pid <"${!dir}/pid"; } 2>/dev/null
	[[ -n $pid ]] || return 1
	_ha_pid_state "$pid"
	[[ -n $STATE && $STATE != [ZXTt] ]]
}

# _ha_failed_over NEW OLD: every live sentinel names NEW, NEW says it is
# master, OLD replicates it with its link up.
_ha_failed_over() {
	_haprobe sentinel-named "$(_rl_port_of "$1")" "$(_rl_port_of "$2")" \
		"$(_ha_data_pass)" $(_ha_sentinel_specs live) 2>/dev/null
}

# ---- cluster ----------------------------------------------------------------

# Polls of six nodes with redis-cli cost dozens of forks a round: the
# cluster's views are read by one python process (_haprobe) instead.

# ccli PORT ARGS...: redis-cli against a cluster node by port (no -c: the
# caller sees MOVED and ASK as they are).
ccli() {
	local port=$1
	shift
	env -u REDISCLI_AUTH timeout 10 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# A port whose bus port (+10000) is below the kernel's ephemeral range
# (32768) and never a default one: 20000-22767, bus 30000-32767.
_ha_cluster_port() {
	local p
	while :; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 2768))
		port_listening "$p" || port_listening $((p + 10000)) || break
	done
	echo "$p"
}

# _ha_start_node NAME: one cluster-enabled redis-server; retries on new
# ports when it cannot bind either of its two ports.
_ha_start_node() {
	local name=$1 dir try port
	dir=$(_rl_server_dir "$name")
	for ((try = 0; try < 20; try++)); do
		port=$(_ha_cluster_port)
		rm -f "$dir/nodes.conf"
		_rl_save_args "$dir" --cluster-enabled yes \
			--cluster-config-file "$dir/nodes.conf" \
			--cluster-node-timeout 1000 \
			--repl-diskless-sync-delay 0
		echo "$port" >"$dir/port"
		if _rl_spawn_redis "$dir"; then
			_rl_export_server "$name" "$dir"
			return 0
		fi
	done
	echo "start_cluster: could not start node $name; log:" >&2
	cat "$dir/log" >&2
	return 1
}

# start_cluster [--replicas]
start_cluster() {
	local n=3 reps=0 node port
	local -a addrs=()
	if [[ ${1:-} == --replicas ]]; then
		n=6
		reps=1
	fi
	CLUSTER_NODES=()
	for ((node = 1; node <= n; node++)); do
		_ha_start_node "C$node" || return 1
		port="C${node}_PORT"
		addrs+=("127.0.0.1:${!port}")
		CLUSTER_NODES+=("C$node")
	done
	export CLUSTER_NODES_LIST="${CLUSTER_NODES[*]}"
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$reps" \
		--cluster-yes >"$BATS_FILE_TMPDIR/cluster-create.log" 2>&1 || {
		echo "start_cluster: redis-cli --cluster create failed:" >&2
		cat "$BATS_FILE_TMPDIR/cluster-create.log" >&2
		return 1
	}
	ha_wait 30 cluster_stable || {
		echo "start_cluster: the cluster did not settle" >&2
		return 1
	}
}

# The node names (arrays are not exported from setup_file).
_ha_nodes() {
	echo "$CLUSTER_NODES_LIST"
}

_ha_node_ports() {
	local nm port
	for nm in $(_ha_nodes); do
		port="${nm}_PORT"
		echo "${!port}"
	done
}

# _ha_any_port: the first node's port (every node answers CLUSTER NODES).
_ha_any_port() {
	echo "${C1_PORT:?no cluster}"
}

# cluster_node_name PORT: C1.. for a node's port.
cluster_node_name() {
	local nm port
	for nm in $(_ha_nodes); do
		port="${nm}_PORT"
		[[ ${!port} == "$1" ]] && {
			echo "$nm"
			return 0
		}
	done
	echo "cluster_node_name: no node on port $1" >&2
	return 1
}

# _ha_slot_map PORT: node PORT's view of the slots as "range port" lines
# (masters only), sorted; replicas as "replica port master-port" lines.
_ha_slot_map() {
	_haprobe map "$1" 2>/dev/null
}

# cluster_stable: every node is up, says cluster_state:ok, knows all the
# nodes, has no slot migrating or importing, and every node's view of the
# slots and replicas is the same; every replica's link is up.
cluster_stable() {
	_haprobe stable $(_ha_node_ports) 2>/dev/null
}

# cluster_slot KEY
cluster_slot() {
	ccli "$(_ha_any_port)" CLUSTER KEYSLOT "$1"
}

# cluster_master_ports: the masters (serving slots), one port a line.
cluster_master_ports() {
	_haprobe masters "$(_ha_any_port)"
}

# _ha_owner_of_slot SLOT [PORT]: the master serving SLOT in PORT's view.
_ha_owner_of_slot() {
	local slot=$1 p=${2:-$(_ha_any_port)}
	_ha_slot_map "$p" | awk -v s="$slot" '
	$1 == "slots" {
		n = split($2, r, "-")
		lo = r[1]; hi = (n == 2) ? r[2] : r[1]
		if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print $3; exit }
	}'
}

# cluster_owner_port KEY: the master serving KEY's slot.
cluster_owner_port() {
	_haprobe owner "$1" "$(_ha_any_port)"
}

# cluster_other_port KEY: a master that does not serve KEY's slot.
cluster_other_port() {
	local owner p
	owner=$(cluster_owner_port "$1")
	for p in $(cluster_master_ports); do
		[[ $p != "$owner" ]] && {
			echo "$p"
			return 0
		}
	done
	return 1
}

# cluster_node_id PORT
cluster_node_id() {
	ccli "$1" CLUSTER MYID
}

# cluster_replica_port PORT: a replica of the master on PORT.
cluster_replica_port() {
	_ha_slot_map "$1" | awk -v m="$1" '$1 == "replica" && $3 == m { print $2; exit }'
}

# cluster_migrate_start SLOT FROM_PORT TO_PORT
cluster_migrate_start() {
	local slot=$1 from=$2 to=$3
	[[ $(ccli "$to" CLUSTER SETSLOT "$slot" IMPORTING "$(cluster_node_id "$from")") == OK ]] &&
		[[ $(ccli "$from" CLUSTER SETSLOT "$slot" MIGRATING "$(cluster_node_id "$to")") == OK ]]
}

# cluster_migrate_keys SLOT FROM_PORT TO_PORT: move every key of SLOT.
cluster_migrate_keys() {
	local slot=$1 from=$2 to=$3 out
	local -a keys
	while :; do
		mapfile -t keys < <(ccli "$from" CLUSTER GETKEYSINSLOT "$slot" 100)
		((${#keys[@]} > 0)) && [[ -n ${keys[0]} ]] || return 0
		out=$(ccli "$from" MIGRATE 127.0.0.1 "$to" "" 0 5000 KEYS "${keys[@]}")
		[[ $out == OK ]] || {
			echo "cluster_migrate_keys: MIGRATE answered: $out" >&2
			return 1
		}
	done
}

# cluster_migrate_finish SLOT TO_PORT: give SLOT to TO (on TO first, as
# redis-cli does, then on every other master) and wait until all agree.
cluster_migrate_finish() {
	local slot=$1 to=$2 id p
	id=$(cluster_node_id "$to")
	[[ $(ccli "$to" CLUSTER SETSLOT "$slot" NODE "$id") == OK ]] || return 1
	for p in $(cluster_master_ports); do
		[[ $p == "$to" ]] && continue
		[[ $(ccli "$p" CLUSTER SETSLOT "$slot" NODE "$id") == OK ]] || return 1
	done
	ha_wait 20 _ha_all_see_owner "$slot" "$to" && ha_wait 20 cluster_stable
}

_ha_all_see_owner() {
	_haprobe allsee "$1" "$2" $(_ha_node_ports) 2>/dev/null
}

# cluster_failover REPLICA_PORT: a coordinated CLUSTER FAILOVER on a
# replica; wait until it is master, its old master its replica with its link
# up, and every node agrees.
cluster_failover() {
	local rp=$1 mp out
	mp=$(ccli "$rp" INFO replication | tr -d '\r' | sed -n 's/^master_port://p')
	[[ -n $mp ]] || {
		echo "cluster_failover: $rp is not a replica" >&2
		return 1
	}
	out=$(ccli "$rp" CLUSTER FAILOVER)
	[[ $out == OK ]] || {
		echo "cluster_failover: CLUSTER FAILOVER answered: $out" >&2
		return 1
	}
	ha_wait 20 _ha_cluster_swapped "$rp" "$mp" && ha_wait 20 cluster_stable
}

_ha_cluster_swapped() {
	local rp=$1 mp=$2 info
	info=$(ccli "$rp" INFO replication 2>/dev/null | tr -d '\r')
	[[ $info == *role:master* ]] || return 1
	info=$(ccli "$mp" INFO replication 2>/dev/null | tr -d '\r')
	[[ $info == *role:slave* && $info == *"master_port:$rp"* &&
		$info == *master_link_status:up* ]]
}

# ---- locks on a cluster -----------------------------------------------------

# cholder NAME: the token in lock NAME's key on its slot's owner.
cholder() {
	local k
	k=$(key "$1")
	ccli "$(cluster_owner_port "$k")" GET "$k"
}

cpttl() {
	local k
	k=$(key "$1")
	ccli "$(cluster_owner_port "$k")" PTTL "$k"
}

clock_held() {
	local k
	k=$(key "$1")
	[[ $(ccli "$(cluster_owner_port "$k")" EXISTS "$k") == 1 ]]
}

clock_free() {
	local k
	k=$(key "$1")
	[[ $(ccli "$(cluster_owner_port "$k")" EXISTS "$k") == 0 ]]
}

# cluster_get KEY...: for each KEY, "PORT VALUE" where PORT is the master
# that answered GET KEY itself (every other master answers MOVED): one
# redis-cli per master for any number of keys.
cluster_get() {
	local p n
	local -a out ports=() vals=()
	local -a lines
	local l skip
	for p in $(cluster_master_ports); do
		mapfile -t lines < <(printf 'GET %s\n' "$@" | ccli "$p")
		# redis-cli reading stdin follows an error reply with an empty
		# line: one entry per reply.
		out=()
		skip=0
		for l in "${lines[@]}"; do
			if ((skip)); then
				skip=0
				continue
			fi
			out+=("$l")
			[[ $l == MOVED* || $l == ASK* ]] && skip=1
		done
		for ((n = 0; n < $#; n++)); do
			[[ ${out[n]:-} == MOVED* || ${out[n]:-} == ASK* ]] && continue
			if [[ -n ${ports[n]:-} ]]; then
				echo "cluster_get: $p and ${ports[n]} both serve key $((n + 1))" >&2
				return 1
			fi
			ports[n]=$p
			vals[n]=${out[n]:-}
		done
	done
	for ((n = 0; n < $#; n++)); do
		echo "${ports[n]:-none} ${vals[n]:-}"
	done
}

# cwaiters NAME: processes waiting for NAME: the places in its wait line
# (on the node that owns its slot), and the subscribers of its release
# channel on all nodes (with classic pub/sub a waiter may subscribe
# through any node).
cwaiters() {
	local line sub
	line=$(_haprobe zcard "$(key "$1"):line" $(_ha_node_ports)) || return 1
	sub=$(_haprobe numsub "$(key "$1"):released" $(_ha_node_ports)) || return 1
	echo $((line + sub))
}

chas_waiters() {
	(($(cwaiters "$1") >= $2))
}

# same_slot_name NAME: a different lock name whose key hashes to the slot
# of NAME's key (CRC16/XMODEM of the hash tag, mod 16384, as Redis does).
same_slot_name() {
	"$_HA_PY" - "$1" <<'EOF'
import sys
def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc
want = crc16(sys.argv[1].encode()) % 16384
n = 0
while True:
    cand = "s%d" % n
    if cand != sys.argv[1] and crc16(cand.encode()) % 16384 == want:
        print(cand)
        break
    n += 1
EOF
}

# cluster_grant_record PORT NAME: the record of lock NAME's last exclusive
# grant (test_helper's grant_record) as the node on PORT has it, read on a
# replica too (READONLY).
cluster_grant_record() {
	local k out
	k=$(key "$2")
	out=$(printf 'READONLY\nGET %s\nXREVRANGE %s + - COUNT 200\n' "$k:grant" "$k:log" |
		ccli "$1" --json)
	sed -n 3p <<<"$out" | grant_record_pick "$(sed -n 2p <<<"$out" |
		python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin) or "")')"
}
