#!/usr/bin/env bash
# Check 6: honest in-team preemption — team B now and then displaces its own
# long low job (after it ran for 3 story hours) with an urgent one — earns B
# little or no penalty. Reads the gpufair run of check 5 (same cluster).
source "$(dirname "$0")/lib.sh"
json=$E2E_OUT/exploit-gpufair.json
[[ -f $json ]] || fail "no $json: check 5 (e2e.t5_exploit_gpufair) must run first"
"$PY" - "$json" <<'PYEOF' || fail "honest preemption check failed (see $json)"
import json, sys
res = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in res["teams"]}
b, a = t["teamb"], t["teama"]
print(f"team B: {b['preemptions_caused']} in-team preemptions, {b['bait_detections']} bait detections, "
      f"penalty {b['penalty']}; team A (gaming): {a['bait_detections']} detections, penalty {a['penalty']}")
if b["preemptions_caused"] < 1:
    sys.exit("B's urgent jobs preempted nothing: the honest preemption did not happen, nothing checked")
if b["bait_detections"] != 0 or (b["penalty"] or 0) > 0.1:
    sys.exit("B was penalised for honest in-team preemption")
if not (a["penalty"] or 0) > 5 * max(b["penalty"] or 0, 0.01):
    sys.exit("A's penalty is not clearly above B's")
print("ok: honest in-team preemption costs B nothing")
PYEOF
