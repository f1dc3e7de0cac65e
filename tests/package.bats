#!/usr/bin/env bats
# package.bats - the release: "make dist" and "make deb".  setup_file runs
# "make deb" once (it makes the tarball first) into a temporary DISTDIR;
# the tests inspect the .deb with dpkg-deb and lintian, run what it
# installs, build the tarball, and make both a second time to compare the
# bytes.  Needs no server.

bats_require_minimum_version 1.5.0
load test_helper

# make_release DISTDIR: make deb (and so dist) into DISTDIR, as a user
# would, not as a child of the make that runs the tests.
make_release() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "$REPO_DIR" deb DISTDIR="$1" >"$1.log" 2>&1 || {
		cat "$1.log"
		return 1
	}
}

# unpacked_make DIR [TARGET...]: make in DIR, showing the output only if it
# fails.
unpacked_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$@" -j2 >make.log 2>&1 || {
		cat make.log
		return 1
	}
}

setup_file() {
	T_VERSION=$(cat "$REPO_DIR/VERSION")
	T_DIST=$BATS_FILE_TMPDIR/dist
	T_DEB=$T_DIST/rlock_${T_VERSION}_$(dpkg --print-architecture).deb
	T_TARBALL=$T_DIST/rlock-$T_VERSION.tar.gz
	T_ROOT=$BATS_FILE_TMPDIR/root
	export T_VERSION T_DIST T_DEB T_TARBALL T_ROOT
	make_release "$T_DIST"
	dpkg-deb -x "$T_DEB" "$T_ROOT"
}
teardown_file() { :; }
setup() { cd "$BATS_TEST_TMPDIR" || return 1; }
teardown() { :; }

# The regular files of the package, without the leading "./", sorted.
deb_files() {
	dpkg-deb -c "$T_DEB" | awk '$1 ~ /^-/ { sub(/^\.\//, "", $6); print $6 }' | LC_ALL=C sort
}

@test "package: make deb leaves the tarball and the .deb in DISTDIR, nothing beside it" {
	[ -f "$T_DEB" ]
	[ -f "$T_TARBALL" ]
	# dpkg-buildpackage writes .changes, .buildinfo and the dbgsym package
	# beside the source directory: they stay in DISTDIR's build directory,
	# which is gone.
	run -0 ls -A "$T_DIST"
	assert_output "$(printf '%s\n' "${T_TARBALL##*/}" "${T_DEB##*/}" | LC_ALL=C sort)"
	run -0 ls -A "$BATS_FILE_TMPDIR"
	assert_output "$(printf '%s\n' dist dist.log root | LC_ALL=C sort)"
}

# The README and the guides, docs/*.md but their index docs/README.md, as
# make install puts them in DOCDIR: one path of the repository a line.
guides() {
	local f
	echo README.md
	for f in "$REPO_DIR"/docs/*.md; do
		[[ ${f##*/} == README.md ]] || echo "docs/${f##*/}"
	done
}

# man_files: the man pages of man/ as the package holds them.
man_files() {
	local page name
	for page in "$REPO_DIR"/man/*.[1-8]; do
		name=${page##*/}
		echo "usr/share/man/man${name##*.}/$name.gz"
	done
}

@test "package: the .deb holds the binary, man pages, completions and docs, owned by root" {
	local want ex f
	want=$({
		printf '%s\n' usr/bin/rlock \
			usr/share/bash-completion/completions/rlock \
			usr/share/zsh/vendor-completions/_rlock \
			usr/share/fish/vendor_completions.d/rlock.fish \
			usr/share/doc/rlock/copyright \
			usr/share/doc/rlock/changelog.gz
		for ex in "$REPO_DIR"/examples/*; do
			echo "usr/share/doc/rlock/examples/${ex##*/}"
		done
		# Not compressed: the man pages name them by these paths.
		for f in $(guides); do
			echo "usr/share/doc/rlock/${f##*/}"
		done
		man_files
	} | LC_ALL=C sort)
	run -0 deb_files
	assert_output "$want"
	run -0 dpkg-deb -c "$T_DEB"
	assert_line --regexp '^-rwxr-xr-x root/root +[0-9]+ .* \./usr/bin/rlock$'
	run -0 awk '$2 != "root/root"' <<<"$output"
	assert_output ""
	# The completions and man page are the ones in the tree, the man page
	# dated and versioned by make.
	cmp "$T_ROOT/usr/share/bash-completion/completions/rlock" "$REPO_DIR/completions/rlock.bash"
	cmp "$T_ROOT/usr/share/zsh/vendor-completions/_rlock" "$REPO_DIR/completions/_rlock"
	cmp "$T_ROOT/usr/share/fish/vendor_completions.d/rlock.fish" "$REPO_DIR/completions/rlock.fish"
	cmp "$T_ROOT/usr/share/doc/rlock/copyright" "$REPO_DIR/debian/copyright"
	# The README and the guides are the tree's, and there are guides.
	[[ $(guides | grep -c '^docs/') -ge 5 ]]
	for f in $(guides); do
		cmp "$T_ROOT/usr/share/doc/rlock/${f##*/}" "$REPO_DIR/$f"
	done
}

@test "package: control fields: version from VERSION, Depends from dh_shlibdeps" {
	run -0 dpkg-deb -f "$T_DEB" Package Version Architecture Recommends Suggests
	assert_line --index 0 "Package: rlock"
	assert_line --index 1 "Version: $T_VERSION"
	assert_line --index 2 "Architecture: $(dpkg --print-architecture)"
	assert_line --index 3 "Recommends: libssl3"
	assert_line --index 4 "Suggests: redis-server"
	# hiredis is a shared library in the package (Debian's security
	# updates reach it) and libssl is loaded with dlopen: the C library
	# and hiredis are all that the binary needs.
	run -0 dpkg-deb -f "$T_DEB" Depends
	assert_output --regexp '^libc6 \(>= [0-9.]+\), libhiredis0\.14 \(>= [0-9.~+-]+\)$'
	run -0 readelf -d "$T_ROOT/usr/bin/rlock"
	assert_output --partial 'Shared library: [libhiredis.so.0.14]'
	refute_output --partial libssl
	assert_output --partial 'Shared library: [libc.so.6]'
	run -0 dpkg-parsechangelog -l "$REPO_DIR/debian/changelog" -SVersion
	assert_output "$T_VERSION"
}

@test "package: lintian reports no errors and no warnings; overrides give reasons" {
	local f prev line
	run --separate-stderr lintian --fail-on error,warning "$T_DEB"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	refute_output --regexp '^[EW]: '
	# An override is a line after a comment saying why.
	for f in "$REPO_DIR"/debian/*lintian-overrides; do
		[[ -e $f ]] || continue
		prev=
		while IFS= read -r line; do
			if [[ -n $line && $line != \#* && $prev != \#* ]]; then
				echo "$f: no reason above: $line"
				return 1
			fi
			prev=$line
		done <"$f"
	done
}

@test "package: the packaged rlock runs and its version is the package's" {
	local rl=$T_ROOT/usr/bin/rlock
	run -0 --separate-stderr "$rl" --version
	assert_equal "$stderr" ""
	# The same build of the same tree as build/rlock, commit and all.
	assert_output "$("$RLOCK" --version)"
	[[ ${lines[0]} =~ ^rlock\ ([^ ]+) ]]
	assert_equal "${BASH_REMATCH[1]}" "$(dpkg-deb -f "$T_DEB" Version)"
	run -0 --separate-stderr "$rl" --help
	assert_equal "$stderr" ""
	assert_output "$("$RLOCK" --help)"
	run -0 --separate-stderr "$rl" run --help
	assert_output "$("$RLOCK" run --help)"
}

@test "package: the man pages are dated by the changelog and versioned by VERSION" {
	local page date name n=0
	date=$(LC_ALL=C date -u -d "@$(dpkg-parsechangelog -l "$REPO_DIR/debian/changelog" -STimestamp)" '+%B %-d, %Y')
	for page in $(man_files); do
		name=${page##*/}
		name=${name%.gz}
		run -0 zcat "$T_ROOT/$page"
		assert_line ".Dd $date"
		assert_line ".Os rlock $T_VERSION"
		# The same page as in man/, but for those two lines.
		run -0 diff <(zcat "$T_ROOT/$page" | grep -v '^\.Dd \|^\.Os') \
			<(grep -v '^\.Dd \|^\.Os' "$REPO_DIR/man/$name")
		# Only STYLE notes below warnings: .Os with a version is one.
		zcat "$T_ROOT/$page" >"$name"
		run -0 mandoc -Tlint -W warning "$name"
		assert_output ""
		run -0 mandoc -Tascii "$name"
		assert_line --regexp "^rlock $T_VERSION +$date +rlock $T_VERSION\$"
		n=$((n + 1))
	done
	((n > 10))
	zcat "$T_ROOT/usr/share/man/man1/rlock.1.gz" >rlock.1
	run -0 cat rlock.1
	assert_line ".Sh AUTHORS"
	assert_line ".Sh LICENSE"
}

@test "package: man finds every page, rlock-run(1) among them, in the .deb and after make install" {
	local page name sec root
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -s -C "$REPO_DIR" install DESTDIR="$BATS_TEST_TMPDIR/inst" PREFIX=/usr >make.log 2>&1 || {
		cat make.log
		return 1
	}
	for root in "$T_ROOT" "$BATS_TEST_TMPDIR/inst"; do
		run -0 env MANPATH="$root/usr/share/man" man -w rlock-run
		assert_output --regexp "^$root/usr/share/man/man1/rlock-run\.1(\.gz)?\$"
		for page in "$REPO_DIR"/man/*.[1-8]; do
			name=${page##*/}
			sec=${name##*.}
			run -0 env MANPATH="$root/usr/share/man" man -w "$sec" "${name%.*}"
			assert_output --regexp "^$root/usr/share/man/man$sec/$name(\.gz)?\$"
		done
	done
	run -0 env MANPATH="$BATS_TEST_TMPDIR/inst/usr/share/man" MANWIDTH=80 MANPAGER=cat man rlock-run
	assert_line --index 0 --regexp '^RLOCK-RUN\(1\) '
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -s -C "$REPO_DIR" uninstall DESTDIR="$BATS_TEST_TMPDIR/inst" PREFIX=/usr
	run -0 find "$BATS_TEST_TMPDIR/inst" -type f
	assert_output ""
}

@test "package: bash-completion's loader finds the packaged completion, which completes 'rlock ru' to run" {
	# Only the unpacked package's share directory, and no user directory.
	run -0 env HOME="$BATS_TEST_TMPDIR" XDG_DATA_DIRS="$T_ROOT/usr/share" \
		bash --norc --noprofile -c '
		source /usr/share/bash-completion/bash_completion || exit 1
		__load_completion rlock || { echo "no completion for rlock"; exit 1; }
		shopt -s extdebug
		fn=$(complete -p rlock | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
		echo "from: $(declare -F "$fn" | cut -d" " -f3-)"
		shopt -u extdebug
		COMP_WORDS=(rlock ru) COMP_CWORD=1 COMP_LINE="rlock ru" COMP_POINT=8
		"$fn" rlock ru rlock
		printf "reply: %s\n" "${COMPREPLY[@]}"'
	assert_output "$(printf '%s\n' "from: $T_ROOT/usr/share/bash-completion/completions/rlock" "reply: run")"
}

@test "package: the tarball is one directory rlock-VERSION of the sources, which make builds, naming a git commit if it has one" {
	local top=rlock-$T_VERSION
	run -0 tar -tzf "$T_TARBALL"
	run -0 cut -d/ -f1 <<<"$output"
	assert_output "$(for l in "${lines[@]}"; do echo "$top"; done)"
	run -0 tar -tzf "$T_TARBALL"
	refute_line --regexp "(^|/)\.git/|\.[oad]\$|^$top/(build|dist)/"
	assert_line "$top/MANIFEST"
	assert_line "$top/LICENSE"
	assert_line "$top/debian/changelog"
	mkdir src
	tar -xzf "$T_TARBALL" -C src
	run -0 ls src
	assert_output "$top"
	# The listed files are the tarball's, which are git's when made in a
	# git checkout.
	run -0 tar -tzf "$T_TARBALL"
	assert_output "$(sed "s,^,$top/," "src/$top/MANIFEST")"
	if git -C "$REPO_DIR" rev-parse --git-dir >/dev/null 2>&1 &&
		[[ -z $(git -C "$REPO_DIR" rev-parse --show-prefix) ]]; then
		run -0 comm -3 <(git -C "$REPO_DIR" ls-files | LC_ALL=C sort) "src/$top/MANIFEST"
		assert_output "$(printf '\tMANIFEST')"
	fi
	# Not in a git checkout, so no commit.  (The unit tests and the
	# scripts' lint copies too: below, nothing but build/ is new.)
	unpacked_make "src/$top" all build/unit luacheck
	run -0 "src/$top/build/rlock" --version
	assert_line --index 0 "rlock $T_VERSION"
	# Made a git checkout, it names the commit; "-dirty" once a tracked
	# file changes.
	git -C "src/$top" init -q
	git -C "src/$top" add -A
	git -C "src/$top" -c user.name=test -c user.email=test@example.invalid \
		commit -qm "the tarball"
	# The build wrote nothing beside the sources: git holds the
	# tarball's files, and build/ is all that it ignores.
	run -0 git -C "src/$top" ls-files
	assert_output "$(cat "src/$top/MANIFEST")"
	unpacked_make "src/$top"
	run -0 git -C "src/$top" status --porcelain --ignored
	assert_output '!! build/'
	run -0 "src/$top/build/rlock" --version
	assert_line --index 0 "rlock $T_VERSION (git $(git -C "src/$top" rev-parse HEAD | cut -c1-12))"
	echo >>"src/$top/README.md"
	unpacked_make "src/$top"
	run -0 "src/$top/build/rlock" --version
	assert_line --index 0 "rlock $T_VERSION (git $(git -C "src/$top" rev-parse HEAD | cut -c1-12)-dirty)"
}

@test "package: make install from the tarball puts the README and the guides in DOCDIR, and make uninstall takes them away" {
	local top=rlock-$T_VERSION dest=$BATS_TEST_TMPDIR/dest f
	mkdir src
	tar -xzf "$T_TARBALL" -C src
	unpacked_make "src/$top"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "src/$top" install \
		DESTDIR="$dest" PREFIX=/usr >install.log 2>&1 || {
		cat install.log
		return 1
	}
	run -0 ls "$dest/usr/share/doc/rlock"
	assert_output "$(guides | sed 's,.*/,,' | LC_ALL=C sort)"
	for f in $(guides); do
		cmp "$dest/usr/share/doc/rlock/${f##*/}" "$REPO_DIR/$f"
		[[ $(stat -c %a "$dest/usr/share/doc/rlock/${f##*/}") == 644 ]]
	done
	[ -x "$dest/usr/bin/rlock" ]
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "src/$top" uninstall \
		DESTDIR="$dest" PREFIX=/usr >uninstall.log 2>&1 || {
		cat uninstall.log
		return 1
	}
	[ ! -e "$dest/usr/share/doc/rlock" ]
	[ ! -e "$dest/usr/bin/rlock" ]
}

@test "package: make deb refuses a VERSION that debian/changelog does not have" {
	run -2 --separate-stderr env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -s -C "$REPO_DIR" deb VERSION=9.9.9 DISTDIR="$BATS_TEST_TMPDIR/d"
	assert_stderr_line --index 0 \
		"make: debian/changelog's newest entry is $T_VERSION, VERSION says 9.9.9"
	[ ! -e "$BATS_TEST_TMPDIR/d" ]
}

@test "package: a second make deb, and make dist from the unpacked tarball, give the same bytes" {
	make_release "$BATS_TEST_TMPDIR/again"
	cmp "$T_TARBALL" "$BATS_TEST_TMPDIR/again/${T_TARBALL##*/}"
	cmp "$T_DEB" "$BATS_TEST_TMPDIR/again/${T_DEB##*/}"
	mkdir src
	tar -xzf "$T_TARBALL" -C src
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "src/rlock-$T_VERSION" dist >make.log 2>&1 || {
		cat make.log
		return 1
	}
	cmp "$T_TARBALL" "src/rlock-$T_VERSION/dist/${T_TARBALL##*/}"
}
