#!/bin/bash
# Session 34: creates (64 clients x 1 KiB) on fresh --insecure clusters, binaries alternating.
#   base      = e311878 (the commit before issue 36's first)
#   typed     = 4ae64ec (APF with typed FlowSchema rules), APF on (the default)
#   typed-off = the same binary with --enable-priority-and-fairness=false (a wrapper script
#               appending the flag to `kuorum serve`)
# creates-on/off-*: the same on/off comparison before the typed rules (7d7d11a).
B=/tmp/ab3/kuorum-bench
for rep in 1 2 3 4; do
  for v in base typed typed-off; do
    $B --kuorum-bin /tmp/ab3/kuorum-$v --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 \
       --out /tmp/ab3/c4-$v-$rep.json --charts none --markdown > /tmp/ab3/c4-$v-$rep.md 2>&1
  done
done
# Fairness: kuorum-bench --kuorum-bin /tmp/ab3/kuorum-new --systems kuorum --scenarios fairness
