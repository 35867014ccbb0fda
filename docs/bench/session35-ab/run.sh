#!/bin/bash
# A/B on creates (64 clients x 1 KiB): base e311878 (before issue 36), 4ae64ec (typed APF rules), counted (this change); alternating.
B=/tmp/ab3/kuorum-bench
cd /tmp/ab4
for rep in 5 6 7 8; do
  for v in base counted; do
    bin=/tmp/ab3/kuorum-$v; [ $v = counted ] && bin=/tmp/ab4/kuorum-counted
    $B --kuorum-bin $bin --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 --out /tmp/ab4/creates-$v-$rep.json --charts none --markdown > /tmp/ab4/creates-$v-$rep.md 2>&1
    echo "creates $v $rep rc $?"
  done
done
echo ALLDONE
