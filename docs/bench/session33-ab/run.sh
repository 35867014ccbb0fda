#!/bin/bash
# A/B: base (e311878, before issue 36) vs new (0907553), alternating; creates 64x1KiB; then new with one no-op validating webhook.
B=/tmp/ab2/kuorum-bench
cd /tmp/ab2
for rep in 1 2 3 4; do
  for v in base new; do
    $B --kuorum-bin /tmp/ab2/kuorum-$v --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 --out /tmp/ab2/creates-$v-$rep.json --charts none --markdown > /tmp/ab2/creates-$v-$rep.md 2>&1
    echo "creates $v $rep rc $?"
  done
  $B --kuorum-bin /tmp/ab2/kuorum-new --systems kuorum --scenarios creates --clients 64 --value-sizes 1024 --noop-webhook --out /tmp/ab2/creates-hook-$rep.json --charts none --markdown > /tmp/ab2/creates-hook-$rep.md 2>&1
  echo "creates hook $rep rc $?"
done
echo ALLDONE
