# fish completion for rlock(1): run a command while holding a lock in Redis.
# "make install" puts this file in $(FISHCOMPDIR)/rlock.fish.
#
# One "complete" line per option, so that tests/docs.bats can compare the
# options here with "rlock CMD --help".  Lines without a -n condition are
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

# Lock names and tokens cannot be guessed; only "run" takes file names (for
# its command).
complete -c rlock -n 'not __rlock_using run' -f

# Subcommands
complete -c rlock -n __rlock_needs_command -a run -d 'Run a command while holding a lock'
complete -c rlock -n __rlock_needs_command -a acquire -d 'Take a lock and print its token'
complete -c rlock -n __rlock_needs_command -a release -d 'Give up a lock'
complete -c rlock -n __rlock_needs_command -a extend -d 'Push back the expiry of a held lock'
complete -c rlock -n __rlock_needs_command -a status -d 'Show who holds locks'
complete -c rlock -n __rlock_needs_command -a bench -d 'Measure lock throughput, latency and exclusion'
complete -c rlock -n __rlock_needs_command -a doctor -d 'Check that the servers can keep locks safe'
complete -c rlock -n __rlock_needs_command -a log -d 'Show the history of a lock'
complete -c rlock -n __rlock_needs_command -a last -d 'Say how the last run of locks ended'
complete -c rlock -n __rlock_needs_command -a pool -d "Define a pool's members, or list who holds each"
complete -c rlock -n __rlock_needs_command -a help -d 'Show the usage of a command'
complete -c rlock -n '__rlock_using help' -x -a 'run acquire release extend status bench doctor log last pool help'

# Global options
complete -c rlock -s u -l url -x -d 'Redis server URL'
complete -c rlock -l prefix -x -d 'Key prefix'
complete -c rlock -l connect-timeout -x -d 'Time allowed to connect'
complete -c rlock -l io-timeout -x -d 'Time allowed for each reply'
complete -c rlock -l password-file -r -F -d 'Read the password from a file'
complete -c rlock -l cacert -r -F -d 'CA certificates for rediss://'
complete -c rlock -l cacertdir -x -a '(__fish_complete_directories (commandline -ct))' -d 'Directory of hashed CA certificates'
complete -c rlock -l cert -r -F -d 'Client certificate for mutual TLS'
complete -c rlock -l key -r -F -d 'Private key of the client certificate'
complete -c rlock -l sni -x -d 'Server name to send and to verify'
complete -c rlock -l insecure -d "Do not verify the server's certificate nor its name"
complete -c rlock -l sentinel-user -x -d 'User for the sentinels'
complete -c rlock -l sentinel-password-file -r -F -d "Read the sentinels' password from a file"
complete -c rlock -s v -l verbose -d 'Say more on stderr'
complete -c rlock -s q -l quiet -d 'Say less on stderr'
complete -c rlock -l json -d 'Machine-readable output'
complete -c rlock -l no-log -d 'Record nothing in the history of the locks'
complete -c rlock -s h -l help -d 'Show the usage and exit'
complete -c rlock -s V -l version -d 'Show the version and exit'

# run and acquire
complete -c rlock -n '__rlock_using run acquire' -s t -l ttl -x -d 'Lease length'
complete -c rlock -n '__rlock_using run acquire' -s n -l nonblock -d 'Fail at once if the lock is held'
complete -c rlock -n '__rlock_using run acquire' -s w -l timeout -x -d 'Wait at most this long for the lock'
complete -c rlock -n '__rlock_using run acquire' -s E -l conflict-exit-code -x -d 'Exit status when not acquired'
complete -c rlock -n '__rlock_using run acquire' -s s -l shared -d 'A shared lock: any number of shared holders'
complete -c rlock -n '__rlock_using run acquire' -s x -l exclusive -d 'An exclusive lock: one holder (the default)'
complete -c rlock -n '__rlock_using run acquire' -s l -l limit -x -d 'A semaphore of this many holders'
complete -c rlock -n '__rlock_using run acquire' -l min-hold -x -d 'Keep the lock at least this long'
complete -c rlock -n '__rlock_using run acquire' -l label -x -d 'What status shows as the command'
complete -c rlock -n '__rlock_using run acquire' -l note -x -d 'A note that status shows and the history keeps'
complete -c rlock -n '__rlock_using run acquire' -l wait-replicas -x -d 'Wait until this many replicas have the lock'
complete -c rlock -n '__rlock_using run acquire' -l priority -x -d 'The line serves higher priority first (-100..100)'
complete -c rlock -n '__rlock_using run acquire' -l progress -x -d 'Without a terminal, a line every DUR of a wait'
complete -c rlock -n '__rlock_using run acquire' -l supersede -d 'Newest wins: take the place of the waiter that also gave it'
complete -c rlock -n '__rlock_using run acquire' -l pool -x -d 'Take free members of this pool (the lock name)'
complete -c rlock -n '__rlock_using run acquire' -l count -x -d 'With --pool: take this many members'
complete -c rlock -n '__rlock_using run acquire' -l with -x -d 'Take this lock too, all of them or none'

# run
complete -c rlock -n '__rlock_using run' -s c -l command -x -d 'Run this string with the shell'
complete -c rlock -n '__rlock_using run' -l on-lost -x -a 'term kill ignore' -d 'What to do with the command when the lock is lost'
complete -c rlock -n '__rlock_using run' -s k -l kill-after -x -d 'Time between SIGTERM and SIGKILL'
complete -c rlock -n '__rlock_using run' -l max-time -x -d 'Stop the command after this long'
complete -c rlock -n '__rlock_using run' -l once-per -x -d 'At most one successful run per period of the server clock'

# acquire
complete -c rlock -n '__rlock_using acquire' -l renew -d 'Keep the lease alive in the background until release'
complete -c rlock -n '__rlock_using acquire' -l pid -x -a '(__fish_complete_pids)' -d 'Stop renewing when this process exits'
complete -c rlock -n '__rlock_using acquire' -l on-lost -x -a 'term kill ignore' -d 'What to send the followed process when the lock is lost'
complete -c rlock -n '__rlock_using acquire' -l format -x -a 'token json env' -d 'Output format'

# release
complete -c rlock -n '__rlock_using release' -l force -d 'Remove the lock whoever holds it'
complete -c rlock -n '__rlock_using release' -l status -x -d 'Record this exit status in the history'

# extend
complete -c rlock -n '__rlock_using extend' -s t -l ttl -x -d 'New time to live, from now'

# bench
complete -c rlock -n '__rlock_using bench' -s c -l clients -x -d 'Concurrent clients'
complete -c rlock -n '__rlock_using bench' -s k -l keys -x -d 'Lock names, 1 to clients'
complete -c rlock -n '__rlock_using bench' -s n -l cycles -x -d 'Cycles in all'
complete -c rlock -n '__rlock_using bench' -s d -l duration -x -d 'Run for this long'
complete -c rlock -n '__rlock_using bench' -s t -l ttl -x -d 'Lease of each acquire'
complete -c rlock -n '__rlock_using bench' -l hold -x -d 'Time held per cycle'
complete -c rlock -n '__rlock_using bench' -l gap -x -d 'Pause between release and the next acquire'
complete -c rlock -n '__rlock_using bench' -s l -l limit -x -d 'Semaphores of this many places'
complete -c rlock -n '__rlock_using bench' -s s -l shared -d 'Shared locks instead of exclusive ones'
complete -c rlock -n '__rlock_using bench' -l no-ping -d 'Skip the PING baseline'

# log
complete -c rlock -n '__rlock_using log' -s n -l lines -x -d 'Show the newest N events'
complete -c rlock -n '__rlock_using log' -l since -x -d 'Show the events of this last while'
complete -c rlock -n '__rlock_using log' -s f -l follow -d 'Keep printing new events until interrupted'

# last
complete -c rlock -n '__rlock_using last' -l max-age -x -d 'Exit 1 unless a run succeeded this recently'
complete -c rlock -n '__rlock_using last' -l prometheus -d 'Print the node_exporter textfile format'
