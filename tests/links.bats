#!/usr/bin/env bats
# links.bats - every link of the documentation leads somewhere: each
# relative link in README.md, docs/*.md and bench/*.md to a file that
# exists and, with a #anchor, to a heading of that file (GitHub's anchor
# rules); each ".Xr rlock... N" in man/ to a page man/NAME.N; each
# "docs/design.md#section" that the code and tests cite to a section of
# that page.  Then the checker itself (tests/links.py) on small trees of
# its own: it fails on each kind of broken link and knows GitHub's
# anchors.  Needs no server.

bats_require_minimum_version 1.5.0
load test_helper

LINKS=$BATS_TEST_DIRNAME/links.py

setup_file() { :; }
teardown_file() { :; }
setup() { cd "$BATS_TEST_TMPDIR" || return 1; }
teardown() { :; }

# links ARGS...: tests/links.py in the repository.
links() {
	(cd "$REPO_DIR" && python3 "$LINKS" "$@")
}

@test "links: every relative link in README.md, docs/*.md and bench/*.md leads to a file, and its #anchor to a heading of it" {
	local files=(README.md)
	cd "$REPO_DIR"
	shopt -s nullglob
	files+=(docs/*.md bench/*.md)
	run -0 links md "${files[@]}"
	assert_output ""
}

@test "links: every .Xr rlock... in man/ names a page in man/" {
	cd "$REPO_DIR"
	run -0 links xr man man/*.[1-9]
	assert_output ""
}

@test "links: every docs/PAGE.md#section the code, scripts and tests cite is a heading of that page, and every file of the repository they name exists" {
	local files=()
	cd "$REPO_DIR"
	mapfile -t files < <(git ls-files lib cli tests Makefile README.md 'docs/*.md' 2>/dev/null |
		grep -v -e '^tests/links\.' -e '/corpus/')
	if ((${#files[@]} == 0)); then # not a git checkout: the tarball
		mapfile -t files < <(grep -v -e '^tests/links\.' -e '/corpus/' MANIFEST |
			grep -E '^(lib|cli|tests|docs)/|^Makefile$|^README.md$')
	fi
	((${#files[@]} > 100))
	run -0 links cites "${files[@]}"
	assert_output ""
	# They do cite it.
	run -0 grep -l 'docs/design.md#the-keys' lib/keys.h
}

# ---- the checker, on trees of its own ------------------------------------

@test "links: the checker takes GitHub's anchors: lower case, punctuation dropped, spaces to '-', code and emphasis as text" {
	run -0 python3 "$LINKS" slug 'Several locks at once: `--with`' \
		'Is my Redis safe for locks?' 'What it *cannot* guarantee' \
		'Sentinel and Cluster (high availability)' \
		'TLS: `--cacert`, `--sni` and [--insecure](x.md)' \
		'The `P{NAME}:log` key' 'Exit 76, "lost"' 'À la carte_1' \
		'1. Overhead of `<tool> KEY -- true`' 'a <b>bold</b> move'
	assert_output "several-locks-at-once---with
is-my-redis-safe-for-locks
what-it-cannot-guarantee
sentinel-and-cluster-high-availability
tls---cacert---sni-and---insecure
the-pnamelog-key
exit-76-lost
à-la-carte_1
1-overhead-of-tool-key----true
a-bold-move"
}

@test "links: the checker finds a link to a missing file, a missing anchor and an anchor of another file, and nothing in code" {
	mkdir -p docs man
	cat >README.md <<-'EOF'
		# Top

		## Again
		## Again
		Setext heading
		--------------

		<a id="custom"></a>
		Fine: [a](docs/g.md), [b](docs/g.md#the-guide), [c](#again-1),
		[d](#setext-heading), [e](#custom), [f](https://example.com/nope.md),
		[g](<docs/g.md> "title"), [h](docs/), [i](man/rlock.1).

		Broken: [j](docs/none.md) and [k](#again-2)
		[l](docs/g.md#nothing) [m](#) [n](man/rlock.1#x)

		[ref]: docs/gone.md
		`[in code](nowhere.md)` and
		```
		[in a fence](nowhere.md)
		```
		~~~~
		```
		[still in the fence](nowhere.md)
		~~~~
	EOF
	printf '# The guide\n\nBack: [top](../README.md#top), [bad](../README.md#the-guide)\n' >docs/g.md
	: >man/rlock.1
	run -1 python3 "$LINKS" md README.md docs/g.md
	assert_output "README.md:13: docs/none.md: no such file
README.md:13: #again-2: no heading with that anchor in README.md
README.md:14: docs/g.md#nothing: no heading with that anchor in docs/g.md
README.md:14: #: an empty anchor
README.md:14: man/rlock.1#x: an anchor in a file that is not Markdown
README.md:16: docs/gone.md: no such file
docs/g.md:3: ../README.md#the-guide: no heading with that anchor in README.md"
}

@test "links: the checker finds an .Xr to an rlock page that is not in man/, in the section given" {
	mkdir man
	printf '.Dd x\n.Xr rlock 1 ,\n.Xr rlock-run 1 ,\n.Xr rlock-formats 7 ,\n.Xr flock 1\n.Xr rlock-nope 1\n' >man/rlock.1
	: >man/rlock-run.1
	: >man/rlock-formats.5
	run -1 python3 "$LINKS" xr man man/rlock.1
	assert_output "man/rlock.1:4: .Xr rlock-formats 7: no page man/rlock-formats.7
man/rlock.1:6: .Xr rlock-nope 1: no page man/rlock-nope.1"
}

@test "links: the checker finds a cited section that is not a heading, a page that is not there, and the old DESIGN citations" {
	mkdir -p docs lib
	printf '# Design\n\n## The keys\n' >docs/design.md
	{
		echo '/* the layout (docs/design.md#the-keys) */'
		echo '/* the line (docs/design.md#the-wait-line) */'
		echo '/* see docs/gone.md#x and xdocs/design.md#nope */'
		printf '/* keys: %s section 3 */\n' DESIGN
		printf '/* exit codes (%s.md section 2) */\n' DESIGN
	} >lib/a.c
	run -1 python3 "$LINKS" cites lib/a.c
	assert_output "lib/a.c:2: docs/design.md#the-wait-line: no heading with that anchor in docs/design.md
lib/a.c:3: docs/gone.md#x: no such file
lib/a.c:4: cites DESIGN, which is docs/design.md now
lib/a.c:5: cites DESIGN, which is docs/design.md now"
}

@test "links: the checker fails on a comment naming a file of the repository that does not exist, never on a placeholder or a recipe" {
	mkdir -p lib/scripts tests
	: >lib/scripts/real.lua
	: >tests/real.bats
	cat >lib/b.c <<'EOF'
/* As lib/scripts/real.lua and tests/real.bats do. */
/* Gone: lib/scripts/gone.lua, and tests/gone.bats. */
/* Placeholders: lib/scripts/NAME.lua, tests/fuzz/fuzz_X.c, lib/*.c. */
EOF
	cat >Makefile <<'EOF'
# Cites lib/gone.h in a comment.
clean:
	rm -f lib/old.o cli/version.h
EOF
	run -1 python3 "$LINKS" cites lib/b.c Makefile
	assert_output "lib/b.c:2: lib/scripts/gone.lua: no such file
lib/b.c:2: tests/gone.bats: no such file
Makefile:1: lib/gone.h: no such file"
}
