# rlock - run a command while holding a lock in Redis.
# Targets: all deps test unit luacheck install uninstall clean demo fuzz
# fuzz-replay, and for a release: dist (dist/rlock-VERSION.tar.gz), deb
# (dist/rlock_VERSION_ARCH.deb, after deb-deps) and distclean.  SAN=1 builds
# with AddressSanitizer and UBSan; WERROR=1 turns warnings into errors (make
# test does this).
#
# Everything a build writes is under build/ (make clean removes it), never
# beside the sources:
#   build/rlock              the program
#   build/man/               the man pages as installed, dated and versioned
#   build/unit               the unit tests (make unit runs them)
#   build/helpers/NAME       the tests' helper programs (tests/helpers/NAME.c)
#   build/obj/               objects, their .d files and librlock.a;
#   build/obj-san/             the same built with SAN=1, kept apart
#   build/flavour            which of the two build/rlock, build/unit and
#                            build/helpers/ were linked from: a change
#                            relinks them
#   build/gen/               generated C: the scripts' bodies, version.h
#   build/host/              luagen, the generator run at build time
#   build/lint/              the scripts as sent, for make luacheck
#   build/fuzz/              the fuzz targets, their library and findings
#   build/MANIFEST           the list make dist packs (in a git checkout)

# The release: VERSION is the one place it is written.  The package
# (debian/changelog, checked by make deb), the man page and the tarball take
# it from there.
VERSION := $(shell cat VERSION)
# The commit a build from a git checkout comes from, "-dirty" when tracked
# files have local changes; empty when this directory is not the top of a
# git checkout (an unpacked tarball, the copy that make deb builds).
RLOCK_COMMIT ?= $(shell [ -z "$$(git rev-parse --show-prefix 2>/dev/null)" ] && \
	[ -n "$$(git rev-parse --git-dir 2>/dev/null)" ] && \
	git describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null)
# The date of the newest debian/changelog entry, as dpkg-buildpackage
# reads it: the man page's date and the tarball's timestamps.
SOURCE_DATE_EPOCH ?= $(shell date -d "$$(sed -n 's/^ -- .*>  //p' debian/changelog | \
	head -n 1)" +%s)
MAN_DATE = $(shell LC_ALL=C date -u -d @$(SOURCE_DATE_EPOCH) '+%B %-d, %Y')

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DOCDIR ?= $(PREFIX)/share/doc/rlock
# What make install puts in DOCDIR: the README and the guides, side by side
# (the man pages name that directory).  docs/README.md, the guides' index
# for readers of the repository, would take the README's name; the
# README's own "where to go next" lists the guides instead.
DOCS = README.md $(filter-out docs/README.md,$(sort $(wildcard docs/*.md)))

PKG_CONFIG ?= pkg-config
CC ?= cc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wstrict-prototypes -Wwrite-strings -Wshadow \
       -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN += -Werror
endif
BUILD = build
ifeq ($(SAN),1)
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer
OBJ = $(BUILD)/obj-san
else
SAN_FLAGS =
OBJ = $(BUILD)/obj
endif

# OpenSSL's headers only: libssl is loaded with dlopen on the first
# rediss:// URL (lib/tls.c), so a plain run never maps it.
DEPS_CFLAGS = $(shell $(PKG_CONFIG) --cflags hiredis 2>/dev/null) \
	      $(shell $(PKG_CONFIG) --cflags openssl 2>/dev/null)
# hiredis is linked statically by default (Debian's libhiredis-dev ships the
# archive): loading it and resolving its symbols at every start costs an
# uncontended run about 70 µs and 80 KB of peak RSS (bench/RESULTS-hostile.md).
# HIREDIS_STATIC=0 links the shared library, as the Debian package does
# (debian/rules), so that Debian's security updates of libhiredis reach it.
HIREDIS_STATIC ?= 1
ifeq ($(HIREDIS_STATIC),1)
DEPS_LIBS = -Wl,-Bstatic -lhiredis -Wl,-Bdynamic
else
DEPS_LIBS = $(shell $(PKG_CONFIG) --libs hiredis 2>/dev/null || echo -lhiredis)
endif
# HOST_CFLAGS: the generator run at build time, never sanitized.
HOST_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(DEPS_CFLAGS) -Ilib -MMD -MP \
	      $(CPPFLAGS) $(CFLAGS)
ALL_CFLAGS = $(HOST_CFLAGS) $(SAN_FLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)
LIBS = $(DEPS_LIBS) -lpthread

# The server's scripts, lib/scripts/NAME.lua (and the pieces they
# include), become C at build time: SCRIPTS_C holds their bodies, digests
# and line maps (lib/scripts/luagen.c), never written by hand.
SCRIPTS = acquire extend release force fence status leave log members with
SCRIPTS_LUA = $(SCRIPTS:%=lib/scripts/%.lua)
GEN = $(BUILD)/gen
SCRIPTS_C = $(GEN)/bodies.c
LUAGEN_SRC = lib/scripts/luagen.c
HOST = $(BUILD)/host
LUAGEN = $(HOST)/luagen
LINT_DIR = $(BUILD)/lint

# The library's sources in the tree; its objects are those and the
# generated C's.
LIB_SRC = $(wildcard lib/*.c) $(filter-out $(LUAGEN_SRC), $(wildcard lib/scripts/*.c))
CLI_SRC = $(wildcard cli/*.c)
UNIT_SRC = $(wildcard tests/unit/*.c)
HELPER_SRC = $(wildcard tests/helpers/*.c)
LIB_OBJ = $(LIB_SRC:%.c=$(OBJ)/%.o) $(SCRIPTS_C:$(GEN)/%.c=$(OBJ)/gen/%.o)
LIBRLOCK = $(OBJ)/librlock.a
CLI_OBJ = $(CLI_SRC:%.c=$(OBJ)/%.o)
UNIT_OBJ = $(UNIT_SRC:%.c=$(OBJ)/%.o)
HELPERS = $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%)
UNIT = $(BUILD)/unit
FLAVOUR = $(BUILD)/flavour
MAN_SRC = $(wildcard man/*.[1-8])
MAN = $(MAN_SRC:man/%=$(BUILD)/man/%)

# Debian packages the build and the tests need (make deps installs them).
DEB_PKGS = gcc make pkg-config libhiredis-dev libssl-dev redis-server \
	   redis-tools redis-sentinel bats bats-support bats-assert mandoc \
	   openssl procps python3 iproute2 bsdutils zsh fish man-db groff-base \
	   clang libclang-rt-14-dev lua-check
# What make deb needs (debian/control's Build-Depends and the tools), and
# what tests/package.bats checks the package with: lintian, and
# bash-completion's loader.
DEB_TOOLS_PKGS = gcc make pkg-config libhiredis-dev libssl-dev debhelper \
		 dpkg-dev lintian bash-completion
DISTDIR = dist
TARBALL = $(DISTDIR)/rlock-$(VERSION).tar.gz
DEB_ARCH = $(shell dpkg --print-architecture 2>/dev/null)

all: $(BUILD)/rlock $(MAN)

# make rlock: the same as make build/rlock.
rlock: $(BUILD)/rlock

$(BUILD)/rlock: $(CLI_OBJ) $(LIBRLOCK) $(FLAVOUR)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LIBRLOCK) $(LIBS)

$(LIBRLOCK): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# The programs are linked from build/obj/ or, with SAN=1, build/obj-san/:
# $(FLAVOUR) says which, and is rewritten only when that changes, so that
# a build of the other kind relinks them even where their objects are
# older.
$(FLAVOUR): FORCE
	@mkdir -p $(@D)
	@echo '$(OBJ)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

# version.h is rewritten only when what it says changes, so that a new
# commit or an edit relinks rlock and an unchanged tree rebuilds nothing.
$(GEN)/version.h: FORCE
	@mkdir -p $(@D)
	@printf '#define RLOCK_VERSION "%s"\n#define RLOCK_COMMIT "%s"\n' \
		'$(VERSION)' '$(RLOCK_COMMIT)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

$(OBJ)/cli/version.o: $(GEN)/version.h
$(OBJ)/cli/version.o: EXTRA_CFLAGS = -I$(GEN)

# The generator runs on the build machine; sha1.c is the library's own.
$(LUAGEN): $(HOST)/$(LUAGEN_SRC:.c=.o) $(HOST)/lib/sha1.o
	$(CC) $(HOST_CFLAGS) $(LDFLAGS) -o $@ $^

$(HOST)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -c -o $@ $<

# Every script and piece, and the header their @NAME@ values come from:
# an edit to any of them regenerates the C and relinks.  The bodies as
# sent, and their line maps, go to $(LINT_DIR) for make luacheck.
$(SCRIPTS_C): $(LUAGEN) $(wildcard lib/scripts/*.lua) lib/protocol.h
	@mkdir -p $(@D) $(LINT_DIR)
	$(LUAGEN) -d $(LINT_DIR) lib/protocol.h $@ $(SCRIPTS_LUA)

# make luacheck: each script's body as the server gets it (its pieces
# included, so that what one defines is seen where another uses it),
# Lua 5.1 with the globals Redis gives a script (lib/scripts/.luacheckrc).
# A warning names the line of the .lua file it is on.  One line per
# script, "luacheck_NAME: ok" or "luacheck_NAME: FAILED": tests/run-tests
# counts these lines.
luacheck: $(SCRIPTS_C)
	@st=0; for s in $(SCRIPTS); do \
		if out=$$(luacheck --config lib/scripts/.luacheckrc --no-color \
			--formatter plain --codes $(LINT_DIR)/$$s.lua 2>&1); then \
			echo "luacheck_$$s: ok"; \
		else \
			printf '%s\n' "$$out" | awk -v s=$$s -F: \
				'NR == FNR { map[FNR] = $$0; next } \
				 $$2 ~ /^[0-9]+$$/ && ($$2 in map) { \
					sub(/^[^:]*:[0-9]+/, "lib/scripts/" map[$$2]); \
					print $$0 " (in " s ".lua)"; next } { print }' \
				$(LINT_DIR)/$$s.map -; \
			echo "luacheck_$$s: FAILED"; st=1; \
		fi; \
	done; exit $$st

# The installed man pages: each man/NAME.SECTION dated and versioned from
# the release.
$(BUILD)/man/%: man/% VERSION debian/changelog
	@mkdir -p $(@D)
	sed -e 's/^\.Dd .*/.Dd $(MAN_DATE)/' -e 's/^\.Os$$/.Os rlock $(VERSION)/' \
		$< >$@

$(OBJ)/gen/%.o: $(GEN)/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS) -c -o $@ $<

# The unit tests reach into cli/ for its writers of outside text.
UNIT_CLI_OBJ = $(OBJ)/cli/text.o
$(UNIT): $(UNIT_OBJ) $(UNIT_CLI_OBJ) $(LIBRLOCK) $(FLAVOUR)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(UNIT_OBJ) $(UNIT_CLI_OBJ) \
		$(LIBRLOCK) $(LIBS)

$(BUILD)/helpers/%: tests/helpers/%.c $(LIBRLOCK) $(FLAVOUR)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBRLOCK) $(LIBS)

# apt_install: install those of the Debian packages $(1) that are missing.
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		if [ "$$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps:
	$(call apt_install,$(DEB_PKGS))

deb-deps:
	$(call apt_install,$(DEB_TOOLS_PKGS))

unit: $(UNIT)
	./$(UNIT)

# make test: install what is missing, rebuild with warnings as errors,
# then run the unit tests and every bats suite against private servers.
test: deps deb-deps
	$(MAKE) clean-objs
	$(MAKE) WERROR=1 $(BUILD)/rlock $(UNIT) $(HELPERS)
	./tests/run-tests

demo: deps
	$(MAKE) $(BUILD)/rlock
	./tests/demo.sh

# Each man page goes to the directory of its section (man1/, man5/...).
install: $(BUILD)/rlock $(MAN)
	install -d $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 755 $(BUILD)/rlock $(DESTDIR)$(BINDIR)/rlock
	for p in $(MAN); do \
		d=$(DESTDIR)$(MANDIR)/man$${p##*.}; \
		install -d $$d && install -m 644 $$p $$d/ || exit 1; \
	done
	install -m 644 completions/rlock.bash $(DESTDIR)$(BASHCOMPDIR)/rlock
	install -m 644 completions/_rlock $(DESTDIR)$(ZSHCOMPDIR)/_rlock
	install -m 644 completions/rlock.fish $(DESTDIR)$(FISHCOMPDIR)/rlock.fish
	install -d $(DESTDIR)$(DOCDIR)
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rlock \
		$(DESTDIR)$(BASHCOMPDIR)/rlock $(DESTDIR)$(ZSHCOMPDIR)/_rlock \
		$(DESTDIR)$(FISHCOMPDIR)/rlock.fish
	for p in $(MAN_SRC:man/%=%); do \
		rm -f $(DESTDIR)$(MANDIR)/man$${p##*.}/$$p; \
	done
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)))
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

# make clean-objs: the objects of both kinds (make test rebuilds them
# with warnings as errors).
clean-objs:
	rm -rf $(BUILD)/obj $(BUILD)/obj-san

# make clean: build/, and what a build wrote beside the sources before
# build/ held it all.
clean:
	rm -rf $(BUILD)
	rm -f rlock rlock.1 cli/version.h lib/librlock.a \
		tests/unit/unit lib/scripts/bodies.c lib/scripts/luagen \
		$(HELPER_SRC:.c=) $(wildcard cli/*.[od] lib/*.[od] \
		lib/scripts/*.[od] tests/unit/*.[od] tests/helpers/*.d)
	rm -rf lib/scripts/lint tests/fuzz/build man-out

distclean: clean
	rm -rf $(DISTDIR)

# make dist: the files git tracks (as they are in the work tree, deleted
# ones left out), listed in MANIFEST, which goes in the tarball too: an
# unpacked tarball has no git, and its make dist reads that list.  Under
# rlock-VERSION/, in the list's order, owned by root, dated from
# debian/changelog, so that the same files give the same bytes.  In a git
# checkout the list is made as build/MANIFEST and packed as MANIFEST.
dist: $(TARBALL)

$(TARBALL): FORCE
	@mkdir -p $(BUILD)
	@if [ -n "$$(git rev-parse --git-dir 2>/dev/null)" ] && \
		[ -z "$$(git rev-parse --show-prefix)" ]; then \
		{ git ls-files; git ls-files --deleted; echo MANIFEST; } | \
			LC_ALL=C sort | uniq -u >$(BUILD)/MANIFEST.tmp && \
			mv -f $(BUILD)/MANIFEST.tmp $(BUILD)/MANIFEST && \
			sed 's,^MANIFEST$$,$(BUILD)/MANIFEST,' $(BUILD)/MANIFEST \
				>$(BUILD)/dist-files; \
	elif [ -f MANIFEST ]; then \
		cp MANIFEST $(BUILD)/dist-files; \
	else \
		echo "make dist: not a git checkout, and no MANIFEST" >&2; exit 1; \
	fi
	mkdir -p $(DISTDIR)
	tar --create --no-recursion --format=gnu --owner=0 --group=0 \
		--numeric-owner --mode=u+rw,go=rX --mtime=@$(SOURCE_DATE_EPOCH) \
		--transform='s,^$(BUILD)/MANIFEST$$,MANIFEST,' \
		--transform='s,^,rlock-$(VERSION)/,S' \
		--file=$(DISTDIR)/tar.tmp --files-from=$(BUILD)/dist-files
	gzip -n -9 <$(DISTDIR)/tar.tmp >$@.tmp
	mv -f $@.tmp $@
	rm -f $(DISTDIR)/tar.tmp

# The newest debian/changelog entry, which names the package's version,
# must be VERSION's.
check-version:
	@v=$$(sed -n '1s/^rlock (\([^)]*\)).*/\1/p' debian/changelog); \
	[ "$$v" = "$(VERSION)" ] || { echo "make: debian/changelog's newest" \
		"entry is $$v, VERSION says $(VERSION)" >&2; exit 1; }

# make deb: build the package from the tarball, unpacked under
# $(DISTDIR) (dpkg-buildpackage writes beside the source directory), and
# keep only the .deb.  The binary names the commit of this checkout.  The
# package's make does not inherit this one's command-line variables, which
# make exports (make test SAN=1 would otherwise package a sanitized build).
deb: deb-deps check-version dist
	rm -rf $(DISTDIR)/deb-build
	mkdir -p $(DISTDIR)/deb-build
	tar -xzf $(TARBALL) -C $(DISTDIR)/deb-build
	cd $(DISTDIR)/deb-build/rlock-$(VERSION) && \
		unset MAKEFLAGS MFLAGS MAKELEVEL SAN WERROR HIREDIS_STATIC && \
		RLOCK_COMMIT='$(RLOCK_COMMIT)' dpkg-buildpackage -b -us -uc
	mv -f $(DISTDIR)/deb-build/rlock_$(VERSION)_$(DEB_ARCH).deb $(DISTDIR)/
	rm -rf $(DISTDIR)/deb-build

.PHONY: all rlock deps deb-deps unit luacheck test demo install uninstall \
	clean clean-objs distclean dist deb check-version FORCE

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_OBJ:.o=.d) $(HELPERS:=.d) \
	$(HOST)/$(LUAGEN_SRC:.c=.d) $(HOST)/lib/sha1.d

# make stress: the randomized safety checker under chaos for STRESS_SECS
# seconds (default 300; make test runs a 20s version); the failover chaos
# harness for STRESS_SECS each through Sentinel, Sentinel with
# --wait-replicas 1, and a cluster (make test runs a 40s Sentinel one;
# all three run, and the target fails after them if one failed); then the
# flash-sale example with 1000 buyers and 100 items.
STRESS_SECS ?= 300
stress: $(BUILD)/rlock $(BUILD)/helpers/faultproxy
	./tests/stress/safety.sh --duration $(STRESS_SECS)
	@st=0; for mode in "" "--wait-replicas 1" "--cluster"; do \
		echo "./tests/stress/failover.sh --duration $(STRESS_SECS) $$mode"; \
		./tests/stress/failover.sh --duration $(STRESS_SECS) $$mode || st=1; \
	done; exit $$st
	./examples/seckill.sh

.PHONY: stress

# ---- fuzzing ------------------------------------------------------------
# Every parser of outside data has a libFuzzer target, tests/fuzz/fuzz_X.c,
# with its seed inputs in tests/fuzz/corpus/fuzz_X/ (and, if there is one,
# a dictionary tests/fuzz/fuzz_X.dict); a new pair of those is picked up
# with no change here.  The targets link the library built again with
# clang, ASan, UBSan and libFuzzer's coverage under build/fuzz/.
#   make fuzz-replay        each target once over its seed corpus (seconds;
#                           tests/run-tests runs it with the unit tests)
#   make fuzz FUZZ_SECS=600 each target for FUZZ_SECS seconds (default 60);
#                           what it finds goes to build/fuzz/new/X/,
#                           crashes to build/fuzz/crashes/X/
#   build/fuzz/fuzz_X FILE  replays one input, e.g. a crash
FUZZ_SECS ?= 60
FUZZ_CC ?= clang
FUZZ_DIR = $(BUILD)/fuzz
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	      -fsanitize=fuzzer-no-link,address,undefined \
	      -fno-sanitize-recover=all -std=c11 -D_GNU_SOURCE $(WARN) \
	      $(DEPS_CFLAGS) -Ilib -Icli -MMD -MP
FUZZ_SRC = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN = $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_DIR)/%)
# The CLI's own parsers of files, and its writers of outside text, that the
# targets call.
FUZZ_CLI_SRC = cli/leasefile.c cli/text.c cli/held.c
FUZZ_OBJ = $(LIB_SRC:%.c=$(FUZZ_DIR)/%.o) \
	   $(SCRIPTS_C:$(GEN)/%.c=$(FUZZ_DIR)/gen/%.o) \
	   $(FUZZ_CLI_SRC:%.c=$(FUZZ_DIR)/%.o)
FUZZ_OPTS = -max_len=8192 -print_final_stats=1

$(FUZZ_DIR)/gen/%.o: $(GEN)/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/librlock.a: $(FUZZ_OBJ)
	rm -f $@
	$(AR) rcs $@ $(FUZZ_OBJ)

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/librlock.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_DIR)/librlock.a $(LIBS)

fuzz-build: $(FUZZ_BIN)

# A failing target is named, and the others still run; the make fails
# after them.
fuzz: fuzz-build
	@st=0; for bin in $(FUZZ_BIN); do \
		t=$${bin##*/}; dict=; \
		[ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
		mkdir -p $(FUZZ_DIR)/new/$$t $(FUZZ_DIR)/crashes/$$t; \
		echo "$$bin: $(FUZZ_SECS)s"; \
		$$bin $(FUZZ_OPTS) $$dict -max_total_time=$(FUZZ_SECS) \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t/ \
			$(FUZZ_DIR)/new/$$t tests/fuzz/corpus/$$t || \
			{ st=1; echo "make fuzz: $$t failed" >&2; }; \
	done; exit $$st

# One line per target, "fuzz_X: N inputs replayed" or, after libFuzzer's
# output, "fuzz_X: FAILED": tests/run-tests counts these lines.
fuzz-replay: fuzz-build
	@st=0; log=$(FUZZ_DIR)/replay.log; for bin in $(FUZZ_BIN); do \
		t=$${bin##*/}; set -- tests/fuzz/corpus/$$t/*; \
		mkdir -p $(FUZZ_DIR)/crashes/$$t; \
		if [ ! -e "$$1" ]; then \
			echo "no seed inputs in tests/fuzz/corpus/$$t/"; \
			echo "$$t: FAILED"; st=1; \
		elif $$bin -artifact_prefix=$(FUZZ_DIR)/crashes/$$t/ "$$@" \
			>$$log 2>&1; then \
			echo "$$t: $$# inputs replayed"; \
		else \
			cat $$log; echo "$$t: FAILED"; st=1; \
		fi; \
	done; rm -f $$log; exit $$st

.PHONY: fuzz fuzz-build fuzz-replay

-include $(FUZZ_OBJ:.o=.d) $(FUZZ_BIN:=.d)
