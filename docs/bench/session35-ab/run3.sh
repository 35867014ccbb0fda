#!/bin/bash
# A/B on creates (64 clients x 1 KiB): base e311878 (before issue 36) vs HEAD (12828d7: counted prefixes, APF metrics, equivalents); alternating.
B=/tmp/ab3/kuorum-bench
cd /tmp/ab4
for rep in 1 2 3 4 5; do
  for v in base head; do
    bin=/tmp/ab3/kuorum-base; [ $v = head ] && bin=/tmp/ab4/kuorum-head
    $B --kuorum-bin $bin --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 --out /tmp/ab4/c3-$v-$rep.json --charts none --markdown > /tmp/ab4/c3-$v-$rep.md 2>&1
    echo "creates $v $rep rc $?"
  done
done
echo ALLDONE
