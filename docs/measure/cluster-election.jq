# Figures of one cluster-election-primary-kill run, read from its history.jsonl (times in seconds of
# real time from the shard-primary-kill fault; spec_s is the last one in spec time):
#   jq -s -c -f docs/measure/cluster-election.jq RUN/history.jsonl
# promotion_s       the promotion note (another node serves the role's slot)
# old_leader_last_s the last action of the term that led at the kill
# new_term_acts_s   the first action that completed under a higher term
(.[1:]) as $e
| ($e|map(select(.kind=="fault" and .fault.name=="shard-primary-kill"))[0].at) as $k
| ($e|map(select(.kind=="note" and (.note|startswith("promotion")) and .at>$k))[0].at) as $p
| ($e|map(select(.kind=="poll" and .at<$k))|map(.poll.token)|max) as $t0
| ($e|map(select(.kind=="poll" and .at>$k and .poll.token>$t0 and .poll.outcome=="ok"))[0].at) as $n
| ($e|map(select(.kind=="poll" and .at>$k and .poll.token==$t0))|last|.at) as $l
| {seed: .[0].seed, promotion_s: (($p-$k)/1e9), old_leader_last_s: ((($l // $k)-$k)/1e9),
   new_term_acts_s: (($n-$k)/1e9), spec_s: (($n-$k)/1e9/.[0].time_scale),
   refused: ([$e[]|select(.kind=="poll" and .poll.outcome=="refused")]|length)}
