#!/usr/bin/env bats
# doctor_tls.bats - rlock doctor's TLS check: the protocol, whether the
# certificate and name were verified, and the days until the server's
# certificate expires (a warning under 14).  One server's certificate ends
# 36 hours from when the file starts, the other's lasts 400 days.

bats_require_minimum_version 1.5.0
load test_helper
load tls_helper

setup_file() {
	tls_make_certs
	_tls_req long "/CN=long"
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$CERTS/long.ext"
	openssl x509 -req -in "$CERTS/long.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" \
		-CAcreateserial -days 400 -extfile "$CERTS/long.ext" -out "$CERTS/long.crt" 2>/dev/null
	# A certificate that ends 36 hours from now: 1 day and some hours left
	# for the next 12 hours, whenever within the second doctor runs (one
	# made with -days 2 has exactly 2 days left in the second it is made).
	_tls_req soon "/CN=soon"
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$CERTS/soon.ext"
	mkdir -p "$CERTS/ca-db"
	: >"$CERTS/ca-db/index.txt"
	printf '[ca]\ndefault_ca = test\n[test]\ndatabase = %s\nnew_certs_dir = %s\nserial = %s\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n' \
		"$CERTS/ca-db/index.txt" "$CERTS/ca-db" "$CERTS/ca-db/serial" >"$CERTS/ca-db/ca.cnf"
	echo 1000 >"$CERTS/ca-db/serial"
	openssl ca -batch -notext -config "$CERTS/ca-db/ca.cnf" -cert "$CERTS/ca.crt" \
		-keyfile "$CERTS/ca.key" -in "$CERTS/soon.csr" -extfile "$CERTS/soon.ext" \
		-enddate "$(date -u -d '+36 hours' +%Y%m%d%H%M%SZ)" -out "$CERTS/soon.crt" 2>/dev/null
	start_redis_tls T --appendonly yes --appendfsync always \
		--tls-cert-file "$CERTS/soon.crt" --tls-key-file "$CERTS/soon.key"
	start_redis_tls L --appendonly yes --appendfsync always \
		--tls-cert-file "$CERTS/long.crt" --tls-key-file "$CERTS/long.key"
	# One server by rediss:// and by redis:// on its plain port; and two
	# others, for a quorum.
	start_redis_tls_plain TP
	start_redis O1
	start_redis O2
}

# check JSON NAME FIELD: FIELD of the first check named NAME.
check() {
	python3 -c '
import json, sys
for c in json.loads(sys.argv[1]):
    if c["check"] == sys.argv[2]:
        print(c[sys.argv[3]]); break
' "$@"
}

@test "doctor tls: a verified certificate that lasts: ok, with the protocol and the days left" {
	run -0 --separate-stderr "$RLOCK" -u "$L_URL" --cacert "$CERTS/ca.crt" --json doctor
	json=$output
	[ "$(check "$json" tls level)" = ok ]
	# 400 days from when setup_file made it: 399 and some hours left, or
	# 400 when doctor runs within the same second.
	[[ $(check "$json" tls message) =~ ^TLSv1\.[23],\ name\ verified,\ the\ server\'s\ certificate\ expires\ in\ (399|400)\ days$ ]]
	[[ $(check "$json" tls value) == @(399|400) ]]
	[ "$(check "$json" cleanup level)" = ok ]
}

@test "doctor tls: a certificate that expires within 14 days warns (exit 1)" {
	run -1 --separate-stderr "$RLOCK" -u "$T_URL" --cacert "$CERTS/ca.crt" --json doctor
	json=$output
	[ "$(check "$json" tls level)" = warn ]
	[[ $(check "$json" tls message) == *"name verified; the server's certificate expires in 1 day: renew it" ]]
	[ "$(check "$json" tls value)" = 1 ]
}

@test "doctor tls: --insecure warns that nothing was verified" {
	run -1 --separate-stderr "$RLOCK" -u "$L_URL" --insecure --json doctor
	json=$output
	[ "$(check "$json" tls level)" = warn ]
	[[ $(check "$json" tls message) == *"certificate and name NOT verified (--insecure)"* ]]
}

@test "doctor: one server by rediss:// and by redis:// on its plain port is a failure naming both, 64; run refuses the same URLs with 64" {
	run -64 --separate-stderr "$RLOCK" --cacert "$CERTS/ca.crt" -u "$TP_URL" -u "$O1_URL" -u "$TP_PLAIN_URL" doctor
	assert_line --regexp "^  fail  distinct +$TP_URL and $TP_PLAIN_URL reach"
	run -64 --separate-stderr "$RLOCK" --cacert "$CERTS/ca.crt" -u "$TP_URL" -u "$O1_URL" -u "$TP_PLAIN_URL" run dup -- touch ran
	assert_stderr --regexp "^rlock: run: $TP_URL and $TP_PLAIN_URL reach one server \(run_id [0-9a-f]{12}\): a quorum needs independent masters$"
	[[ ! -e ran ]]
	run -1 --separate-stderr "$RLOCK" --cacert "$CERTS/ca.crt" -u "$TP_URL" -u "$O1_URL" -u "$O2_URL" --json doctor
	json_check "$output" '[c for c in d if c["check"] == "distinct"] == []'
}
