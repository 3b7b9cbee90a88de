#!/bin/bash
# gpufair-show against a state file made through the C API: table, JSON,
# and clear errors for missing and corrupt files.
set -euo pipefail
show=$1 make_state=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$make_state" "$dir/gpufair.state" || fail "make_state"
export SLURM_CONF=/nonexistent/slurm.conf

out=$("$show" --now 1600 "$dir/gpufair.state")
echo "$out"
grep -qE '^teama +[0-9.]+' <<<"$out" || fail "no teama row"
grep -qE '^teamb +[0-9.]+' <<<"$out" || fail "no teamb row"
grep -q 'job 8 preempted job 3: BAIT' <<<"$out" || fail "bait decision not shown"
grep -q 'job 9 preempted job 6: RESERVATION' <<<"$out" || fail "reservation decision not shown"
grep -qE '^teamb +teamb +gfb1 +[0-9.]+' <<<"$out" || fail "no row for user gfb1 inside teamb"
grep -q '^teama preempted its own jobs: its lower-rank jobs started since .* are scavengers' <<<"$out" || fail "scavenger episode not shown"
grep -q '^teama jumped the queue lately (recent jump prices [0-9]* GPU-s' <<<"$out" || fail "teama's recent jump not shown"
grep -q '^teamb jumped the queue lately' <<<"$out" && fail "teamb, which never jumped, is shown as a jumper"
# 60 days on, teama's price (half-life bait_window) and penalty have decayed: no jumper.
grep -q 'jumped the queue lately' <<<"$("$show" --now $((1600 + 60 * 86400)) "$dir/gpufair.state")" &&
  fail "teama still shown as a jumper 60 days after its jump"

json=$("$show" --json --now 1600 "$dir/gpufair.state")
python3 - "$json" <<'PY' || fail "JSON check"
import json, sys
d = json.loads(sys.argv[1])
t = {x["name"]: x for x in d["teams"]}
assert set(t) == {"teama", "teamb"}, t.keys()
a, b = t["teama"], t["teamb"]
# teamb ran 16 GPUs for 1400 s (decayed), teama 8 GPUs for 11 s + the skip charge.
assert b["gpu_hours"] > 0 and a["gpu_hours"] > 0, (a, b)
assert a["penalty"] > 0 and a["bait_detections"] == 1, a
assert a["effective_fairshare"] < a["fairshare"], a
assert b["penalty"] == 0, b
# teamb's reservation took its nodes back from teama's job 6: listed for both
# teams, never bait, no price.
for team in (a, b):
    r = [x for x in team["decisions"] if x["reservation"]]
    assert len(r) == 1 and r[0]["preemptor"] == 9 and r[0]["victim"] == 6, team
    assert not r[0]["bait"] and not r[0]["reclaim"] and r[0]["charged_gpu_s"] == 0, r
    assert "borrowed time" in r[0]["reason"], r
assert len(b["decisions"]) == 1, b
dec = a["decisions"][-1]
assert dec["bait"] and not dec["reservation"] and dec["preemptor"] == 8 and dec["victim"] == 3, dec
assert "skipped" in dec["reason"], dec
# The jump at 1001 began teama's scavenger episode (scavenger_window 1 day).
assert a["scavenger_since"] == 1001 and a["scavenger_until"] == 1001 + 86400, a
assert b["scavenger_since"] == 0 and b["scavenger_until"] == 0, b
# Its jump was priced (teamb's job waited ahead): teama jumped lately, teamb not.
assert a["jumped_lately"] and 1 <= a["recent_jump_price_gpu_s"], a
assert not b["jumped_lately"] and b["recent_jump_price_gpu_s"] == 0, b
# Associations inside the teams: gfa2 (teama/nlp) and gfb1 were charged
# their jobs; the team's own account reports the team.
u = {(x["account"], x["user"]): x for x in d["assocs"]}
assert ("teama/nlp", "gfa2") in u and ("teamb", "gfb1") in u, u.keys()
assert u[("teamb", "gfb1")]["raw_gpu_hours"] > 0 and u[("teama/nlp", "gfa2")]["raw_gpu_hours"] > 0, u
assert u[("teamb", "")]["is_team"] and u[("teamb", "")]["fairshare"] == b["effective_fairshare"], u
assert u[("teamb", "gfb1")]["in_team"] == 1, u  # its team's only user: the best
print("json ok:", {k: (v["gpu_hours"], v["effective_fairshare"], v["penalty"]) for k, v in t.items()})
PY

# Errors: a clear message and a non-zero exit, never a crash.
if msg=$("$show" "$dir/missing.state" 2>&1); then fail "missing file accepted"; fi
grep -q "cannot open state file" <<<"$msg" || fail "missing: $msg"
head -c 20 "$dir/gpufair.state" > "$dir/trunc.state"
if msg=$("$show" "$dir/trunc.state" 2>&1); then fail "truncated file accepted"; fi
echo "truncated: $msg"
printf 'GPUFAIR1garbage-garbage-garbage-garbage' > "$dir/bad.state"
if msg=$("$show" "$dir/bad.state" 2>&1); then fail "corrupt file accepted"; fi
echo "corrupt: $msg"
if "$show" --decisions x "$dir/gpufair.state" 2>/dev/null; then fail "bad --decisions accepted"; fi
echo "OK: gpufair-show"
