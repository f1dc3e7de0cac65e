#!/usr/bin/env bats
# layers.bats - the house of lib/, drawn from what its objects define and
# use (nm): every call goes to the same floor or below, as the table
# of docs/design.md ("The layers") stacks them; no two files call each
# other; every file has a floor; every extern symbol of librlock is
# rlock_ or rl_ (the compiler's own __ names aside); no function of lib/
# runs over 120 lines.  Then the checker itself (tests/layers.py) on small
# trees of its own.  Needs no server.

bats_require_minimum_version 1.5.0
load test_helper

LAYERS=$BATS_TEST_DIRNAME/layers.py

setup_file() { :; }
teardown_file() { :; }
setup() { cd "$BATS_TEST_TMPDIR" || return 1; }
teardown() { :; }

# objdir: where the objects of build/rlock are (build/flavour says).
objdir() {
	local d
	d=$(cat "$REPO_DIR/build/flavour") || return 1
	[[ -d $REPO_DIR/$d/lib ]] || { echo "no objects in $d/lib: make first" >&2; return 1; }
	echo "$d"
}

@test "layers: every call between lib's files goes to its own floor or below, with no circle, and every file has a floor" {
	local d
	d=$(objdir)
	cd "$REPO_DIR"
	run -0 python3 "$LAYERS" check docs/design.md "$d"
	assert_output ""
	# The table has every floor, bottom up.
	run -0 python3 "$LAYERS" floors docs/design.md
	assert_line "0 util"
	assert_line "1 conn"
	assert_line "6 wait"
	assert_line "7 lock"
	assert_line "8 doctor"
}

@test "layers: every extern symbol of librlock is rlock_ or rl_" {
	local d
	d=$(objdir)
	cd "$REPO_DIR"
	run -0 python3 "$LAYERS" symbols "$d/librlock.a"
	assert_output ""
}

@test "layers: no function of lib/ runs over 120 lines" {
	cd "$REPO_DIR"
	run -0 python3 "$LAYERS" long 120 lib/*.c lib/scripts/*.c
	assert_output ""
}

@test "layers: the checker finds a call up a floor, a circle, a file on no floor, a symbol without prefix and a long function" {
	mkdir -p docs lib obj/lib
	cat >docs/design.md <<'MD'
# Design

Inside `lib/`, each layer uses only the ones below it:

| layer | files | what it does |
|---|---|---|
| low | `a.c`, `b.c` | the bottom |
| high | `c.c` | the top |

More.
MD
	printf 'int c(void);\nint a(void) { return c(); }\n' >lib/a.c
	printf 'int d(void);\nint b(void) { return d(); }\n' >lib/b.c
	printf 'int a(void);\nint c(void) { return a(); }\n' >lib/c.c
	printf 'int b(void);\nint d(void) { return b(); }\n' >lib/d.c
	for f in a b c d; do
		cc -c -o "obj/lib/$f.o" "lib/$f.c"
	done
	run -1 python3 "$LAYERS" check docs/design.md obj
	assert_output "lib/d.c: on no floor of docs/design.md
lib/a.c calls up into lib/c.c
a circle: lib/a.c, lib/c.c
a circle: lib/b.c, lib/d.c"
	ar rcs obj/lib.a obj/lib/a.o obj/lib/b.o
	run -1 python3 "$LAYERS" symbols obj/lib.a
	assert_output "obj/lib.a: a has no prefix
obj/lib.a: b has no prefix"
	{
		echo 'int f(void)'
		echo '{'
		for i in $(seq 5); do echo '	;'; done
		echo '}'
	} >lib/long.c
	run -1 python3 "$LAYERS" long 5 lib/long.c
	assert_output "lib/long.c:1: f is 7 lines"
	run -0 python3 "$LAYERS" long 7 lib/long.c
}
