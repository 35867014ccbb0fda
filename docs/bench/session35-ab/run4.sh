#!/bin/bash
# A/B on creates (64 clients x 1 KiB): base e311878 (before issue 36) vs final 93827b2; then final with one no-op validating webhook. Alternating.
B=/tmp/ab4/bench-final
cd /tmp/ab4
for rep in 1 2 3 4; do
  for v in base final webhook; do
    bin=/tmp/ab4/kuorum-final; extra=""
    [ $v = base ] && bin=/tmp/ab3/kuorum-base
    [ $v = webhook ] && extra="--noop-webhook"
    $B --kuorum-bin $bin --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 $extra --out /tmp/ab4/c4-$v-$rep.json --charts none --markdown > /tmp/ab4/c4-$v-$rep.md 2>&1
    echo "creates $v $rep rc $?"
  done
done
echo ALLDONE
