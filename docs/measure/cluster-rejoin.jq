# Figures of one cluster-primary-kill-rejoin run, read from its history.jsonl (seconds of real time):
#   jq -s -c -f docs/measure/cluster-rejoin.jq RUN/history.jsonl
# promo1_s, promo2_s  each shard-primary-kill to the promotion noted after it
# rejoin_s            the shard-node-restart step: process start to the cluster whole again
# rejoined            what the restarted node became
# gap1_s, gap2_s      the longest gap between successive polls of any endpoint after each kill (the
#                     first up to the restart, the second up to the end of the run)
(.[1:]) as $e
| ($e|map(select(.kind=="fault" and .fault.name=="shard-primary-kill"))) as $k
| ($e|map(select(.kind=="note" and (.note|startswith("promotion"))))) as $p
| ($e|map(select(.kind=="fault" and .fault.name=="shard-node-restart"))[0]) as $r
| def gap($from; $to): [$e[] | select(.kind=="poll" and .poll.outcome!="refused")] | group_by(.endpoint)
    | map([.[] | .at] | . as $a | [range(1; length) | select($a[.] > $from and $a[.-1] < $to) | $a[.] - $a[.-1]] | max // 0)
    | max;
{seed: .[0].seed, promo1_s: (($p[0].at-$k[0].at)/1e9), rejoin_s: (($r.end-$r.at)/1e9), rejoined: $r.fault.params.nodes,
 promo2_s: (($p[1].at-$k[1].at)/1e9), gap1_s: (gap($k[0].at; $r.at)/1e9), gap2_s: (gap($k[1].at; 1e18)/1e9),
 refused: ([$e[]|select(.kind=="poll" and .poll.outcome=="refused")]|length)}
