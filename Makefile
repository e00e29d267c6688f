# swift-gatekeeper: every command installs what is missing first (as root, with apt-get), then builds.
#   make run       build and start the REPL (gatekeeper-repl) with the demo accounts
#   make ldap-demo, make oidc-demo   the REPL over a throwaway directory (slapd) or OpenID Connect
#                  provider (glewlwyd; OIDC_ENV=qa and OIDC_FLOW=password choose)
#   make test      build and run every test, then a smoke run of the benchmark and of each fuzz target
#   make bench     build in release mode and print the benchmark figures (BENCHMARKS.md keeps the last)
#   make bench-sssd  only gatekeeperd against SSSD (as root), and its picture, docs/images/sssd-scaling.svg
#   make sanitize  run the tests under AddressSanitizer, then the concurrent tests under ThreadSanitizer
#                  (make sanitize-address, make sanitize-thread: one of them)
#   make fuzz      run each libFuzzer target for FUZZ_SECONDS (60) seconds; FUZZ_TARGETS="..." picks some,
#                  FUZZ_RUNS=N stops each after N executions, FUZZ_MAX_LEN=N bounds the inputs, FUZZ_TIMEOUT=S
#                  how long one input may take (20)
#   make faults    the fault-injection tests: full and read-only file systems, killed writers, hanging and
#                  crashing PAM modules, an LDAP server killed, unreachable or slow, audit sinks gone
#   make leaks     1,000 PAM logins under LeakSanitizer; fails on any leak
#   make lint      check formatting with swift-format
#   make fuzz-stacks  200,000 random provider stacks against libpam (make test runs 10,000 with a fixed
#                  seed); STACK_SEED=N repeats a run
#   make install   build in release mode and install the tools, gatekeeperd with its systemd units,
#                  pam_gatekeeper.so, a pam-auth-update profile (off), manual pages, bash completion and
#                  example configurations under PREFIX (/usr/local), staged under DESTDIR if given
#   make pam-module  build pam_gatekeeper.so alone, in .build/pam
#   make uninstall remove what make install installed (an edited configuration is kept)
#   make deb       build the Debian package in .build/deb (dpkg-deb only); make test-package checks it
#   make startup-order  write Packaging/startup-order.txt anew: the functions the tools run at start, which
#                  the release build lays side by side (needs valgrind, installed if missing)

SHELL := /bin/bash

# A test filter written over several lines: the blanks the line breaks leave are removed.
empty :=
regex = $(subst $(empty) ,,$(strip $(1)))

SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)
SWIFT_FORMAT ?= $(shell command -v swift-format 2>/dev/null || echo /opt/swift/usr/bin/swift-format)
DOCC ?= $(shell command -v docc 2>/dev/null || echo $(dir $(SWIFT))docc)

# Debian packages the build and the tests need beyond the Swift toolchain: libpam's headers, pam_wrapper's
# pam_matrix module, pam_access (libpam-modules) and pamtester for the PAM tests, a C compiler for their fixture module, and the
# account tools (useradd, chage) for the tests that run as root; libxcrypt and apr-util for the users
# file, with Apache's htpasswd and mkpasswd (whois) as the peers its tests compare with; pam_faillock
# (libpam-modules) and the faillock tool (libpam-modules-bin) as the lockout's peers, and python3's
# hashlib as the audit chain's; liboath (the one-time codes) with oathtool and pam_oath as their peers, and
# libqrencode (enrolment's QR code) with the qrencode tool as its peer; libldap, and slapd, ldap-utils and
# openssl for the throwaway directory server the LDAP tests start (slapd installed unconfigured: no system
# directory is set up or started); mandoc, groff and man-db (lexgrog, man), lintian and bash-completion to
# check the manual pages, the Debian package and the completion, and dpkg-dev (dpkg-shlibdeps) and
# binutils (strip) to build the package; libunistring for the Unicode case fold the lockout counts unknown
# names under; libcurl's and OpenSSL's headers for the OpenID Connect provider (both libraries are loaded
# when an oidc entry is made), with glewlwyd, sqlite3 and curl for the throwaway provider its tests sign in
# against (Examples/oidc/glewlwyd.sh; installed, never started as a service) and python3-cryptography
# for the tests' own hostile one; libpwquality (with pwscore, its command, and cracklib's dictionary) for
# the quality of new passwords of a users file; sudo, the peer of a whole login's cost (make bench); tmux, a
# shell with job control for the REPL's Ctrl-Z; g++, for libstdc++'s archive (linked into the release tools) and
# the C++ PAM module make test-package logs in through; openssh-server and openssh-client, the sshd and ssh the
# module's ssh tests log in with, and sssd-ldap with libpam-sss, the SSSD they and make bench compare with
# (started only in a mount namespace of their own; installing libpam-sss adds pam_sss to common-auth);
# python3-matplotlib (Debian's own python3) draws make bench's picture of the two side by side.
DEBIAN_PACKAGES := pkg-config libpam0g-dev libpam-modules libpam-modules-bin libpam-wrapper pamtester gcc \
	libc6-dev passwd libcrypt-dev libaprutil1-dev apache2-utils whois time python3 liboath-dev oathtool libpam-oath \
	libqrencode-dev qrencode libldap-dev slapd ldap-utils openssl mandoc lintian bash-completion \
	dpkg-dev man-db groff-base binutils libunistring-dev libcurl4-openssl-dev libssl-dev glewlwyd sqlite3 curl \
	python3-cryptography libpwquality-dev libpwquality-tools cracklib-runtime sudo tmux g++ openssh-server \
	openssh-client sssd-ldap libpam-sss python3-matplotlib

.PHONY: pam-module startup-order deps build-deps build run ldap-demo oidc-demo test test-package release install uninstall deb bench bench-sssd bench-smoke sanitize sanitize-address sanitize-thread leaks lint docs fuzz fuzz-targets fuzz-build fuzz-smoke fuzz-stacks faults

# What building the tools alone needs (make install, make deb): headers, a C compiler, libstdc++'s archive
# (g++), strip, dpkg-shlibdeps.
BUILD_PACKAGES := pkg-config libpam0g-dev gcc libc6-dev libcrypt-dev libaprutil1-dev liboath-dev libqrencode-dev \
	libldap-dev binutils dpkg-dev libunistring-dev libcurl4-openssl-dev libssl-dev libpwquality-dev g++

# Installs the Debian packages named in $(1) that are missing (as root; otherwise names them and stops).
define install-missing
	@missing=""; \
	for package in $(1); do \
		dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" -ne 0 ]; then echo "Missing Debian packages:$$missing (run as root, or install them)"; exit 1; fi; \
		echo "Installing:$$missing"; \
		echo 'slapd slapd/no_configuration boolean true' | debconf-set-selections 2>/dev/null || true; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install-missing,$(DEBIAN_PACKAGES))

build-deps:
	$(call install-missing,$(BUILD_PACKAGES))

build: deps
	$(SWIFT) build

# The REPL needs only what building it does: none of the test peers and servers are installed for it.
run: build-deps
	$(SWIFT) build --product gatekeeper-repl
	@$(SWIFT) run --skip-build gatekeeper-repl $(ARGS)

# The REPL against a throwaway OpenLDAP directory (Examples/ldap/demo.sh), stopped when the REPL ends.
ldap-demo: build
	@bash Examples/ldap/demo.sh $$($(SWIFT) build --show-bin-path)/gatekeeper-repl

# The REPL over a throwaway OpenID Connect provider (glewlwyd); OIDC_ENV=qa and OIDC_FLOW=password choose.
oidc-demo: build
	@bash Examples/oidc/demo.sh $$($(SWIFT) build --show-bin-path)/gatekeeper-repl

# The suites run side by side, each in a process of its own (Tests/Runner/run-suites.py, TEST_JOBS at once,
# the longest first): they mostly wait (fail delays, time-outs, servers starting), so four or six at once take
# a third of the time one at a time does. Inside a process a suite's tests run one after another: many start
# a tool and wait for it, which holds one of the cooperative pool's threads (as many as cores: two on CI) for
# the tool's whole run, and side by side such tests would starve the rest. Each test still runs its own
# concurrency (a hundred logins at once, cancellation races) as it would anywhere.
# As root, each suite's process runs in a private copy of the host (Tests/Runner/private-host.sh: /etc, /var,
# /usr, /run, /tmp and the rest overlays whose writes go with the process): suites that add accounts, PAM
# files or root's own state never meet, and none of it reaches the host. What a suite leaves behind in /run,
# /tmp, /dev/shm, /var/lib, /etc/pam.d or the account files fails it. The host itself is checked as well:
# the entries of /run, /tmp and /var/lib, and the fingerprint of everything of swift-gatekeeper's and of PAM's
# on it (Tests/Runner/host-state.sh: root's /var/lib/gatekeeper, an installed package, /etc/pam.d, the
# accounts) are the same after the run as before it, or the run fails. The tests' own files live in one
# directory per test process, removed when it exits (Tests/Support); everything else the run makes in a
# temporary directory goes to a TMPDIR of the run's own, removed after it. SwiftPM's lock files
# (/tmp/_PATH_.lock, one per build directory, kept for the next build) and the toolchain's
# /tmp/swift-generated-sources are not the run's.
# While the suites run, the fuzz targets are built and run a few seconds each (fuzz-smoke) and the package is
# built and checked (test-package), at the lowest priority (nice 19): they take the processor time the suites
# leave, never the time a suite needs. The benchmark's smoke run (bench-smoke: every section, a hundredth of
# its work, no figures checked) runs beside them too; it mostly waits on the processes it starts.
# A compiler warning in the package's own sources fails the run too (a fresh clone builds every file, so
# CI sees them all; a local build shows only the files it compiles again), and so does a DocC warning in the
# core's catalog or its symbols' comments (make docs).
TEST_JOBS ?= 6
LEFTOVERS = for d in /run /tmp /var/lib; do ls -A "$$d" 2>/dev/null | sed "s|^|$$d/|"; done \
	| grep -Ev '^/tmp/(_.*\.lock|swift-generated-sources)$$' | LC_ALL=C sort
test: deps
	@mkdir -p .build && $(LEFTOVERS) > .build/leftovers-before.txt && bash Tests/Runner/host-state.sh > .build/host-before.txt
	set -e; base=/run; [ -w /run ] || base=$${XDG_RUNTIME_DIR:-/tmp}; \
		scratch=$$(mktemp -d "$$base/gatekeeper-tmpdir.XXXXXX"); chmod 1777 "$$scratch"; \
		trap 'rm -rf "$$scratch"' EXIT; export TMPDIR="$$scratch"; \
		$(SWIFT) build --build-tests 2>&1 | tee .build/build-tests.log; test $${PIPESTATUS[0]} -eq 0; \
		if grep -E '^$(CURDIR)/[^:]+:[0-9]+:[0-9]+: warning:' .build/build-tests.log; then \
			echo "make test: the build warns (above); a warning fails the run"; exit 1; fi; \
		$(MAKE) --no-print-directory docs; \
		nice -n 19 $(MAKE) --no-print-directory fuzz-smoke > .build/test-fuzz.log 2>&1 & fuzz=$$!; \
		nice -n 19 $(MAKE) --no-print-directory test-package > .build/test-package.log 2>&1 & package=$$!; \
		$(MAKE) --no-print-directory bench-smoke > .build/test-bench.log 2>&1 & bench=$$!; \
		tests=0; python3 Tests/Runner/run-suites.py --jobs $(TEST_JOBS) || tests=$$?; \
		beside=0; \
		report() { if wait "$$2"; then grep -E "$$4" "$$3" || true; else cat "$$3"; echo "make test: $$1 failed (above)"; beside=1; fi; }; \
		report fuzz-smoke $$fuzz .build/test-fuzz.log '^target |^[a-z-]+ +[0-9]+ .* (ok|FAILED)'; \
		report test-package $$package .build/test-package.log '^test-package: [0-9]+ checks'; \
		report bench-smoke $$bench .build/test-bench.log '^bench report:'; \
		test $$tests -eq 0 -a $$beside -eq 0
	@$(LEFTOVERS) > .build/leftovers-after.txt; \
		left=$$(LC_ALL=C comm -13 .build/leftovers-before.txt .build/leftovers-after.txt); \
		if [ -n "$$left" ]; then echo "make test left these behind:"; echo "$$left"; exit 1; fi; \
		bash Tests/Runner/host-state.sh > .build/host-after.txt; \
		if ! diff .build/host-before.txt .build/host-after.txt; then \
			echo "make test changed the host's own state (above: < before, > after)"; exit 1; fi

# The tools as they ship: release mode, the Swift runtime linked statically (each run starts faster and
# smaller than with the runtime's shared libraries, and needs nothing from the toolchain), no run path.
VERSION := 0.1.0
PREFIX ?= /usr/local
# Linked by the toolchain's lld with relative relocations packed (DT_RELR, read by glibc 2.36 and later):
# the 41,000 relocations of a statically linked Swift runtime take 8 KiB instead of 960 KiB, which every
# run read at start (0.7 MiB less resident memory for each run, make bench). Older glibc: gold, unpacked.
PACKED_RELOCATIONS := $(shell getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ split($$2, v, "."); if (v[1] > 2 || (v[1] == 2 && v[2] >= 36)) print "yes" }')
# lld also lays the code that a login, a refused login, --help and gatekeeper-passwd run side by side at the
# start of the binary, in the order of Packaging/startup-order.txt (each function in a section of its own,
# -function-sections): a run keeps 2 MiB less of the binary resident (make bench). make startup-order
# writes that list anew from the tools' own runs; a stale one only costs time, never correctness.
STARTUP_ORDER := $(CURDIR)/Packaging/startup-order.txt
STATIC_LINK_FLAGS := $(if $(PACKED_RELOCATIONS),-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker --symbol-ordering-file=$(STARTUP_ORDER) -Xlinker --no-warn-symbol-ordering)
# The toolchain's static linking exports every public symbol of the package's own modules from the
# executable (-export-dynamic): 3,500 names that nothing looks up (plugins reach the host only through the
# function table it hands them), that the dynamic loader searches first for every library and module it
# loads, and that keep unused public functions from being collected. --no-export-dynamic drops them: 320 KB
# less code, 0.5 MiB less resident at a login.
# Generic types' metadata is reached through the accessor of each type rather than by demangling its name
# at run time (-disable-concrete-type-metadata-mangled-name-accessors): the first use of each no longer
# parses a mangled name and looks up its conformances among the binary's 3,500, a login starts 4 per cent
# sooner, and the code is smaller, not larger (make bench; measured side by side).
# The C++ library the Swift runtime is written with is linked in as well, from its archive: the toolchain's
# own `-lstdc++` finds, first on the search path, a linker script naming libstdc++.a. Loading libstdc++.so
# cost every run of every tool 1.6 million instructions of symbol binding (its 4,300 relocations, each
# looked up in the executable and every library before it), 0.5 ms and 0.8 MiB: a Swift program that prints
# a line (make bench's floor) starts in 1.44 ms and 3.0 MiB instead of 1.98 ms and 3.8 MiB, measured side by
# side. Its symbols are not exported (the toolchain's --exclude-libs ALL, and --no-export-dynamic), so a PAM
# module or plugin written in C++ binds to its own libstdc++.so, never to this copy.
STATIC_CXX := $(CURDIR)/.build/static-libstdc++
STATIC_BUILD = mkdir -p $(STATIC_CXX) && echo 'INPUT(-l:libstdc++.a)' > $(STATIC_CXX)/libstdc++.so && \
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --scratch-path .build/static \
	-Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xlinker --no-export-dynamic -Xlinker -L$(STATIC_CXX) $(STATIC_LINK_FLAGS)
TOOLS := gatekeeper-run gatekeeper-passwd gatekeeper-repl gatekeeper-pam-helper gatekeeperd
# pam_gatekeeper.so: C, so that no Swift runtime is loaded into sudo or sshd; hardened as Debian builds.
PAM_MODULE = gcc -shared -fPIC -Wall -Wextra -Werror -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong \
	-fvisibility=hidden -Wl,-z,relro -Wl,-z,now -Wl,--as-needed -I Sources/CLibraries/CGatekeeperWire/include \
	-o $(1) Sources/Daemon/PAMModule/pam_gatekeeper.c -lpam
# pam-load: make bench's driver of whole PAM logins (gatekeeperd against SSSD).
PAM_LOAD = gcc -Wall -Wextra -Werror -O2 -o $(1) Benchmarks/pam-load/pam_load.c -lpam
# SwiftPM does not know the start-up list or these link flags as inputs of the link: a tool linked before
# the list or this file last changed is removed, so that it is linked again as they say.
FORGET_STALE_LAYOUT = for tool in $(TOOLS) gatekeeper-bench-hello gatekeeper-bench-floor; do \
	[ ! "$(STARTUP_ORDER)" -nt ".build/static/release/$$tool" ] && [ ! Makefile -nt ".build/static/release/$$tool" ] \
	|| rm -f ".build/static/release/$$tool"; done

release: build-deps
	@$(FORGET_STALE_LAYOUT)
	for tool in $(TOOLS); do $(STATIC_BUILD) --product $$tool || exit 1; done
	$(call PAM_MODULE,.build/static/release/pam_gatekeeper.so)

# The PAM module alone, for trying it from the build directory: .build/pam/pam_gatekeeper.so.
pam-module: build-deps
	mkdir -p .build/pam
	$(call PAM_MODULE,.build/pam/pam_gatekeeper.so)

# The start-up layout (above), from the tools' runs under valgrind's callgrind: each tool is linked once
# with a link map, which says which functions sit in sections of their own.
startup-order: build-deps
	$(call install-missing,valgrind)
	@[ -n "$(PACKED_RELOCATIONS)" ] || { echo "make startup-order needs lld (glibc 2.36 or later)"; exit 1; }
	for tool in gatekeeper-run gatekeeper-passwd; do \
		$(STATIC_BUILD) --product $$tool -Xlinker -Map=$(CURDIR)/.build/static/release/$$tool.map || exit 1; \
	done
	bash Packaging/startup-order.sh .build/static/release $(STARTUP_ORDER)

# PREFIX, SYSCONFDIR and DESTDIR reach install.sh through the environment, as given: never through the
# shell's quoting, which a quote in a value would break; install.sh refuses what the unit and profile cannot name.
install: export PREFIX := $(PREFIX)
install: export SYSCONFDIR := $(SYSCONFDIR)
install: export DESTDIR := $(DESTDIR)
install: release
	BUILD=.build/static/release bash Packaging/install.sh install

uninstall: export PREFIX := $(PREFIX)
uninstall: export SYSCONFDIR := $(SYSCONFDIR)
uninstall: export DESTDIR := $(DESTDIR)
uninstall:
	bash Packaging/install.sh uninstall

deb: release
	VERSION=$(VERSION) BUILD=.build/static/release bash Packaging/deb.sh .build/deb

# The package and the installation, checked: the tools linked in their start-up order (above), lintian,
# the manual pages, an install of the .deb (as root; unpacked into a directory otherwise) that runs the
# tools with no toolchain, and its removal.
test-package: deb
	$(if $(PACKED_RELOCATIONS),python3 Packaging/startup-order.py --check .build/static/release $(STARTUP_ORDER))
	VERSION=$(VERSION) bash Tests/Runner/private-host.sh bash Packaging/test-package.sh .build/deb/swift-gatekeeper_$(VERSION)_$$(dpkg --print-architecture).deb

# The tools and drivers make bench measures, built as they ship.
BENCH_BUILD = $(SWIFT) build -c release --product gatekeeper-bench && $(FORGET_STALE_LAYOUT) && \
	for product in gatekeeper-run gatekeeper-passwd gatekeeper-bench-hello gatekeeper-bench-floor gatekeeperd; do \
		$(STATIC_BUILD) --product $$product || exit 1; done && \
	$(call PAM_MODULE,.build/static/release/pam_gatekeeper.so) && $(call PAM_LOAD,.build/static/release/pam-load) && \
	mkdir -p .build/bench
BENCH_RUN = GATEKEEPER_RUN=.build/static/release/gatekeeper-run \
	GATEKEEPERD=.build/static/release/gatekeeperd GATEKEEPER_PAM_MODULE=$(CURDIR)/.build/static/release/pam_gatekeeper.so \
	GATEKEEPER_PAM_LOAD=$(CURDIR)/.build/static/release/pam-load \
	GATEKEEPER_PASSWD=.build/static/release/gatekeeper-passwd \
	GATEKEEPER_HELLO=.build/static/release/gatekeeper-bench-hello \
	GATEKEEPER_FLOOR=.build/static/release/gatekeeper-bench-floor \
	$(SWIFT) run -c release --skip-build gatekeeper-bench

bench: deps
	# The whole-process figures measure gatekeeper-run as a tool ships: the Swift runtime linked in
	# statically (dynamically linked, `gatekeeper-run --help` took 1.8 ms and 3.7 MiB more when measured).
	@$(BENCH_BUILD)
	set -o pipefail; $(BENCH_RUN) --json-file .build/bench/report.json | tee .build/bench/table.txt
	# BENCHMARKS.md keeps the latest full run, with the machine it came from.
	bash Benchmarks/write-report.sh .build/bench/table.txt .build/bench/report.json > .build/bench/BENCHMARKS.md
	mv .build/bench/BENCHMARKS.md BENCHMARKS.md
	python3 Benchmarks/check-report.py < .build/bench/report.json
	# The picture docs/fleet.md shows: gatekeeperd against SSSD, logins a second and p99 by clients at once.
	/usr/bin/python3 Benchmarks/sssd-chart.py .build/bench/report.json docs/images/sssd-scaling.svg

# gatekeeperd against SSSD alone (as root; about ten minutes): the table, .build/bench/sssd.json, the picture.
bench-sssd: deps
	@$(BENCH_BUILD)
	set -o pipefail; $(BENCH_RUN) --sssd --json-file .build/bench/sssd.json | tee .build/bench/sssd.txt
	/usr/bin/python3 Benchmarks/sssd-chart.py .build/bench/sssd.json docs/images/sssd-scaling.svg

# What CI runs so the benchmark cannot rot: every measurement with a hundredth of its work, in the debug
# build; it must run to its end with every section measured and well-formed JSON. Not figures.
bench-smoke: deps
	$(SWIFT) build --product gatekeeper-bench
	$(SWIFT) build --product gatekeeper-run
	$(SWIFT) build --product gatekeeper-passwd
	$(SWIFT) build --product gatekeeper-pam-helper
	$(SWIFT) build --product gatekeeper-bench-hello
	$(SWIFT) build --product gatekeeper-bench-floor
	$(SWIFT) build --product gatekeeperd
	$(call PAM_MODULE,$$($(SWIFT) build --show-bin-path)/pam_gatekeeper.so)
	$(call PAM_LOAD,$$($(SWIFT) build --show-bin-path)/pam-load)
	mkdir -p .build/bench
	# In a private copy of the host (the benchmark logs in as root with the default state directories, adds an
	# account for sudo and a PAM service): make test leaves the host's own state alone.
	bash Tests/Runner/private-host.sh $$($(SWIFT) build --show-bin-path)/gatekeeper-bench --smoke \
		--json-file .build/bench/smoke.json > .build/bench/smoke.txt
	python3 Benchmarks/check-report.py < .build/bench/smoke.json
	/usr/bin/python3 Benchmarks/sssd-chart.py .build/bench/smoke.json .build/bench/smoke-sssd.svg
	bash Benchmarks/write-report.sh .build/bench/smoke.txt .build/bench/smoke.json > .build/bench/SMOKE.md

sanitize: sanitize-address sanitize-thread

sanitize-address: deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan
	# Leak detection is off here: FoundationEssentials' String(contentsOfFile:) leaks its read buffer in
	# Swift 6.3.1, which the test helpers call; leaks in this package are checked by `make leaks`.
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --skip-build --no-parallel --sanitize=address --scratch-path .build/asan

# ThreadSanitizer over the tests that run logins, writers and look-ups side by side. Built with
# GATEKEEPER_TSAN, every lock of the package is a pthread mutex (GatekeeperSupport.Locked), which TSan
# follows; nothing is suppressed.
sanitize-thread: deps
	$(SWIFT) build --build-tests --sanitize=thread -Xswiftc -DGATEKEEPER_TSAN --scratch-path .build/tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(SWIFT) test --skip-build --no-parallel \
		--sanitize=thread -Xswiftc -DGATEKEEPER_TSAN --scratch-path .build/tsan --filter '$(TSAN_TESTS)' --skip '$(TSAN_SKIP)'

leaks: deps
	@$(SWIFT) build --sanitize=address --scratch-path .build/asan-bench --product gatekeeper-bench 2>&1 \
		| grep -v "Cannot export local symbol" || true
	ASAN_OPTIONS=detect_leaks=1 .build/asan-bench/debug/gatekeeper-bench --pam-leak-loop 1000

# The fault-injection tests (make test runs them too): file systems full or read-only (as root), state
# replaced by a directory, writers killed with SIGKILL, PAM modules that hang, crash or are missing, LDAP
# servers killed, dropping connections or silent, audit sinks that cannot be written.
FAULT_TESTS := $(call regex, FullFileSystemTests|ReplacedStateTests|KilledWriterTests|KilledLockoutWriterTests|IsolatedPAMTests|\
	aStackNamingAMissingModule|LDAPFaultTests|LDAPCancellationTests|aServerKilledDuringTheLoginFallsBack|\
	aDeadServerIsUnavailable|theDirectoryDownLogsInFromTheCache|aLogThatCannotBeWrittenIsReportedOnce|\
	aMissingSocketIsReportedOnce)
faults: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --no-parallel --filter '$(FAULT_TESTS)'

# ThreadSanitizer's share of make sanitize: the tests that run logins, writers and look-ups side by side.
TSAN_TESTS := $(call regex, GatekeeperTests|ProtectedActionTests|SingleFlightTests|LoadTests|ProviderChainTests|BlockingPoolTests|\
	FileAuthProviderTests|PAMAuthProviderTests|IsolatedPAMTests|LDAPProviderTests|LDAPFaultTests|\
	LDAPCancellationTests|OfflineCacheTests|FaillockStoreTests|AuditLogTests|PluginLoadingTests|BrokenPipeTests)
# Left out under ThreadSanitizer: tests whose concurrency is between processes (hundreds of instrumented
# tool runs, which TSan cannot watch across and which outlast the tests' time limits).
TSAN_SKIP := twoWritersLoseNothing|aKilledWriterLeavesAWholeFile

# The fuzz targets (Fuzz/gatekeeper-fuzz), built with libFuzzer and AddressSanitizer.
FUZZ_TARGETS ?= users-file configuration validation pam-conversation helper-protocol faillock ldap-filter oidc-token ledger \
	daemon-message
FUZZ_SECONDS ?= 60
# Optimised (-O keeps every precondition and overflow trap): four to seven times the executions a second of
# a debug build for the targets that do not wait on files or libpam. FUZZ_BUILD=debug builds unoptimised.
FUZZ_BUILD ?= release
# And the offline cache's model (OfflineCacheModelTests) at six times make test's sequences (each half within the
# suite's time limit).
MODEL_SEQUENCES ?= 6000
fuzz: fuzz-targets
	$(SWIFT) build --build-tests
	GATEKEEPER_MODEL_SEQUENCES=$(MODEL_SEQUENCES) python3 Tests/Runner/run-suites.py OfflineCacheModelTests

fuzz-targets: fuzz-build
	FUZZ_BINARY=.build/fuzz/$(FUZZ_BUILD)/gatekeeper-fuzz bash Fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The core's DocC catalog (Sources/Core/Authentication/Authentication.docc) with the module's symbols, every
# warning an error: a link to a symbol that is gone, or an article a topic no longer lists, fails make test.
docs: build-deps
	$(SWIFT) package dump-symbol-graph --minimum-access-level public > .build/symbol-graph.log 2>&1 || \
		{ cat .build/symbol-graph.log; exit 1; }
	rm -rf .build/docs && mkdir -p .build/docs/symbols
	cp $$($(SWIFT) build --show-bin-path)/../symbolgraph/Authentication.symbols.json .build/docs/symbols/
	$(DOCC) convert Sources/Core/Authentication/Authentication.docc --additional-symbol-graph-dir .build/docs/symbols \
		--fallback-display-name Authentication --fallback-bundle-identifier org.swift-gatekeeper.Authentication \
		--output-dir .build/docs/Authentication.doccarchive --warnings-as-errors

fuzz-build: deps
	$(SWIFT) build -c $(FUZZ_BUILD) --product gatekeeper-fuzz -Xswiftc -enable-testing \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DGATEKEEPER_FUZZ \
		-Xlinker --export-dynamic-symbol=LLVMFuzzerRunDriver --scratch-path .build/fuzz 2>&1 \
		| grep -v "Cannot export local symbol"; test $${PIPESTATUS[0]} -eq 0

# What CI runs so the fuzz targets cannot rot: each for a few seconds, built unoptimised (a build a quarter of
# the release build's time; its executions check every assertion, where -O keeps only preconditions).
fuzz-smoke:
	$(MAKE) fuzz-targets FUZZ_SECONDS=$${FUZZ_SECONDS:-4} FUZZ_BUILD=$${FUZZ_BUILD:-debug}

lint:
	$(SWIFT_FORMAT) lint --strict -r Sources Tools Examples Tests Benchmarks Fuzz Package.swift

fuzz-stacks: deps
	$(SWIFT) build --build-tests
	GATEKEEPER_STACKS=200000 GATEKEEPER_TEST_SEED=$${STACK_SEED:-$$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')} \
		$(SWIFT) test --skip-build --filter randomStacksAgreeWithLibpam
