# fish completion for rlock(1): run a command while holding a lock in Redis.
# "make install" puts this file in $(FISHCOMPDIR)/rlock.fish.
#
# One "complete" line per option, so that tests/docs.bats can compare the
# options here with "rlock CMD --help".  Each description is the help's
# text (cli/main.c) with a capital, and each command's its summary in
# "rlock --help": change them there first.  Lines without a -n condition are
# the global options, accepted before the command and after it.  A
# subcommand's options are offered before and after its operands, where
# rlock takes them.

# The subcommand: the first word that is neither an option nor the value of
# a global option.
function __rlock_subcommand
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $t
            case -u --url --prefix --connect-timeout --io-timeout --password-file \
                    --cacert --cacertdir --cert --key --sni --sentinel-user \
                    --sentinel-password-file
                set skip 1
            case '-*'
            case '*'
                echo $t
                return 0
        end
    end
    return 1
end

function __rlock_needs_command
    not __rlock_subcommand >/dev/null
end

# __rlock_using CMD...: the subcommand is one of CMD.
function __rlock_using
    set -l sub (__rlock_subcommand)
    or return 1
    contains -- $sub $argv
end

# Lock names and tokens cannot be guessed; only "run" and "lead" take file
# names (for their command).
complete -c rlock -n 'not __rlock_using run lead' -f

# Subcommands
complete -c rlock -n __rlock_needs_command -a run -d 'Run a command while holding a lock'
complete -c rlock -n __rlock_needs_command -a lead -d 'Run a command on one candidate at a time, forever'
complete -c rlock -n __rlock_needs_command -a acquire -d 'Take a lock and print its token'
complete -c rlock -n __rlock_needs_command -a release -d 'Give up a lock held by a token'
complete -c rlock -n __rlock_needs_command -a extend -d 'Push back the expiry of a held lock'
complete -c rlock -n __rlock_needs_command -a status -d 'Show who holds locks'
complete -c rlock -n __rlock_needs_command -a bench -d 'Measure lock throughput, latency and exclusion'
complete -c rlock -n __rlock_needs_command -a doctor -d 'Check that the servers can keep locks safe'
complete -c rlock -n __rlock_needs_command -a log -d 'Show what happened to a lock'
complete -c rlock -n __rlock_needs_command -a last -d 'Show the last run of locks, or check it is recent'
complete -c rlock -n __rlock_needs_command -a pool -d "Define a pool's members, or list who holds each"
complete -c rlock -n __rlock_needs_command -a help -d 'Show help for a command'
complete -c rlock -n '__rlock_using help' -x -a 'run lead acquire release extend status bench doctor log last pool help'

# Global options
complete -c rlock -s u -l url -x -d 'Redis server (repeatable; default $RLOCK_URL)'
complete -c rlock -l prefix -x -d 'Key prefix (default $RLOCK_PREFIX or rlock:)'
complete -c rlock -l connect-timeout -x -d 'Connection timeout (default 2s)'
complete -c rlock -l io-timeout -x -d 'Timeout of each request (default 2s)'
complete -c rlock -l password-file -r -F -d 'Read the password from FILE'
complete -c rlock -l cacert -r -F -d 'CA certificates for rediss://'
complete -c rlock -l cacertdir -x -a '(__fish_complete_directories (commandline -ct))' -d 'Directory of hashed CA certificates (c_rehash)'
complete -c rlock -l cert -r -F -d 'Client certificate for mutual TLS'
complete -c rlock -l key -r -F -d "The client certificate's private key"
complete -c rlock -l sni -x -d "Server name to verify instead of the URL's host"
complete -c rlock -l insecure -d "Do not verify the server's certificate nor name"
complete -c rlock -l sentinel-user -x -d 'User for the sentinels'
complete -c rlock -l sentinel-password-file -r -F -d "The sentinels' password (not the master's)"
complete -c rlock -s v -l verbose -d 'More diagnostics'
complete -c rlock -s q -l quiet -d 'Fewer diagnostics'
complete -c rlock -l json -d 'Machine-readable output'
complete -c rlock -l no-log -d "Record nothing in the locks' history"
complete -c rlock -s h -l help -d 'Show this help'
complete -c rlock -s V -l version -d 'Show the version'

# run and acquire
complete -c rlock -n '__rlock_using run acquire' -s t -l ttl -x -d 'Lease length (default 30s)'
complete -c rlock -n '__rlock_using run acquire' -s n -l nonblock -d 'Fail at once if the lock is held'
complete -c rlock -n '__rlock_using run acquire' -s w -l timeout -x -d 'Wait at most DUR (-w 0 is -n; default: forever)'
complete -c rlock -n '__rlock_using run acquire' -s E -l conflict-exit-code -x -d 'Exit status when not acquired (default 75)'
complete -c rlock -n '__rlock_using run acquire' -s s -l shared -d 'A shared lock: any number of shared holders'
complete -c rlock -n '__rlock_using run acquire' -s x -l exclusive -d 'An exclusive lock: one holder (the default)'
complete -c rlock -n '__rlock_using run acquire' -s l -l limit -x -d 'A semaphore: up to N holders at once'
complete -c rlock -n '__rlock_using run acquire' -l min-hold -x -d 'Keep the lock at least DUR after taking it'
complete -c rlock -n '__rlock_using run acquire' -l label -x -d "What status shows as the holder's command"
complete -c rlock -n '__rlock_using run acquire' -l note -x -d 'A note for status and the history'
complete -c rlock -n '__rlock_using run acquire' -l wait-replicas -x -d 'Wait until N replicas have the lock'
complete -c rlock -n '__rlock_using run acquire' -l priority -x -d '-100..100, higher served first (default 0)'
complete -c rlock -n '__rlock_using run acquire' -l progress -x -d 'Print a line every DUR of a wait (default 30s)'
complete -c rlock -n '__rlock_using run acquire' -l supersede -d 'Newest wins: replace the --supersede waiter'
complete -c rlock -n '__rlock_using run acquire' -l pool -x -d 'Take free members of pool NAME'
complete -c rlock -n '__rlock_using run acquire' -l count -x -d 'With --pool: take K members (default 1)'
complete -c rlock -n '__rlock_using run acquire' -l with -x -d 'Take lock NAME too: all of them or none'

# run
complete -c rlock -n '__rlock_using run' -s c -l command -x -d 'Run STRING with $SHELL -c (or /bin/sh -c)'
complete -c rlock -n '__rlock_using run' -l on-lost -x -a 'term kill ignore' -d 'What a lost lock does to COMMAND (default term)'
complete -c rlock -n '__rlock_using run' -s k -l kill-after -x -d 'SIGKILL this long after SIGTERM (default 10s)'
complete -c rlock -n '__rlock_using run' -l max-time -x -d 'Terminate COMMAND if it runs longer'
complete -c rlock -n '__rlock_using run' -l once-per -x -d 'At most one run that exits 0 per period DUR'

# lead
complete -c rlock -n '__rlock_using lead' -s t -l ttl -x -d 'Lease length (default 30s)'
complete -c rlock -n '__rlock_using lead' -l priority -x -d '-100..100, higher served first (default 0)'
complete -c rlock -n '__rlock_using lead' -l label -x -d "What status shows as the holder's command"
complete -c rlock -n '__rlock_using lead' -l note -x -d 'A note for status and the history'
complete -c rlock -n '__rlock_using lead' -l wait-replicas -x -d 'Wait until N replicas have the lock'
complete -c rlock -n '__rlock_using lead' -s k -l kill-after -x -d 'SIGKILL this long after SIGTERM (default 10s)'
complete -c rlock -n '__rlock_using lead' -l restart -x -a 'always on-failure never' -d 'Run again after COMMAND ends (default always)'
complete -c rlock -n '__rlock_using lead' -l restart-delay -x -d 'Wait DUR before running again (default 1s)'
complete -c rlock -n '__rlock_using lead' -l leader-file -r -F -d 'Say fence, since, host and pid in PATH while leading'
complete -c rlock -n '__rlock_using lead' -l standby -d 'Start COMMAND at once everywhere; signal who leads'
complete -c rlock -n '__rlock_using lead' -l promote -x -a 'USR1 USR2 HUP INT QUIT TERM ALRM WINCH CONT' -d 'With --standby: sent when leading (default USR1)'
complete -c rlock -n '__rlock_using lead' -l demote -x -a 'USR1 USR2 HUP INT QUIT TERM ALRM WINCH CONT' -d 'With --standby: sent when no longer (default USR2)'
complete -c rlock -n '__rlock_using lead' -l on-promote -x -d 'Run CMD with sh -c once leading'
complete -c rlock -n '__rlock_using lead' -l on-demote -x -d 'Run CMD with sh -c when no longer, before the release'
complete -c rlock -n '__rlock_using lead' -l hook-timeout -x -d 'Kill a hook still running after DUR (default 10s)'
complete -c rlock -n '__rlock_using lead' -l health -x -d 'Run for leadership only while sh -c CMD passes'
complete -c rlock -n '__rlock_using lead' -l health-every -x -d 'Run --health this often (default 5s)'
complete -c rlock -n '__rlock_using lead' -l health-fails -x -d 'Step down after N failures in a row (default 3)'

# acquire
complete -c rlock -n '__rlock_using acquire' -l renew -d 'Renew in the background until released'
complete -c rlock -n '__rlock_using acquire' -l pid -x -a '(__fish_complete_pids)' -d 'With --renew: release when PID exits'
complete -c rlock -n '__rlock_using acquire' -l on-lost -x -a 'term kill ignore' -d 'With --renew: what a loss does (default ignore)'
complete -c rlock -n '__rlock_using acquire' -l format -x -a 'token json env' -d 'What to print (default token; env is for eval)'

# release
complete -c rlock -n '__rlock_using release' -l force -d 'Remove the lock whoever holds it'
complete -c rlock -n '__rlock_using release' -l status -x -d 'Record N (0..255) as how the work ended'

# extend
complete -c rlock -n '__rlock_using extend' -s t -l ttl -x -d 'New lease length from now (default 30s)'

# bench
complete -c rlock -n '__rlock_using bench' -s c -l clients -x -d 'Concurrent clients (default 50)'
complete -c rlock -n '__rlock_using bench' -s k -l keys -x -d 'Lock names, 1..C (default C)'
complete -c rlock -n '__rlock_using bench' -s n -l cycles -x -d 'Run N cycles in all'
complete -c rlock -n '__rlock_using bench' -s d -l duration -x -d 'Or run for DUR (default 5s)'
complete -c rlock -n '__rlock_using bench' -s t -l ttl -x -d 'Lease length of each acquire (default 10s)'
complete -c rlock -n '__rlock_using bench' -l hold -x -d 'Time held per cycle (default 0)'
complete -c rlock -n '__rlock_using bench' -l gap -x -d 'Pause before each next acquire (default 0)'
complete -c rlock -n '__rlock_using bench' -s l -l limit -x -d 'Semaphores of N places instead of locks'
complete -c rlock -n '__rlock_using bench' -s s -l shared -d 'Shared locks instead of exclusive ones'
complete -c rlock -n '__rlock_using bench' -l no-ping -d 'Skip the PING baseline'

# log
complete -c rlock -n '__rlock_using log' -s n -l lines -x -d 'The last N events (default 20)'
complete -c rlock -n '__rlock_using log' -l since -x -d 'Only events of the last DUR'
complete -c rlock -n '__rlock_using log' -s f -l follow -d 'Then print new events until interrupted'

# last
complete -c rlock -n '__rlock_using last' -l max-age -x -d 'Exit 1 unless each lock succeeded within DUR'
complete -c rlock -n '__rlock_using last' -l prometheus -d 'Print node_exporter textfile metrics'
