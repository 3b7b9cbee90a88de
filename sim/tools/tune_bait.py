#!/usr/bin/env python3
"""Score bait-rule settings with gpufair-sim: how well each closes every gaming
scenario and how often it misjudges honest teams. Prints one line per profile.

usage: tune_bait.py GPUFAIR_SIM [--seeds 0,11,22] [--profile "k=v,k=v"]...
       (no --profile: the defaults of include/gpufair/config.h only)

Figures per profile, over all seeds:
  min_adv      smallest gaming advantage over the gaming-*.yaml and exploit
               scenarios (>= 1 means the exploit is closed everywhere)
  min_jain     smallest Jain index (share-normalised GPU-hours) over the same
               runs: how far the penalised gamer falls below its share
  slow_first_h latest first bait detection of the low-rate gamer
               (gaming-slow.yaml), in hours: how long a slow gamer goes unnoticed
  honest       bait detections / in-team preemptions of the honest teams in
               honest.yaml, and their largest penalty at the end
  busy         the same for honest-busy.yaml (frequent honest preemption)
"""
import json, os, re, subprocess, sys, tempfile
from multiprocessing import Pool

HERE = os.path.dirname(os.path.abspath(__file__))
SCEN = os.path.join(HERE, "..", "scenarios")
GAMING = ["exploit", "gaming-multi-user", "gaming-jitter", "gaming-array", "gaming-small",
          "gaming-requeue", "gaming-slow"]


def run(sim, name, seed, sets, decisions=False):
    fd, js = tempfile.mkstemp(suffix=".json"); os.close(fd)
    args = [sim, "--scenario", os.path.join(SCEN, name + ".yaml"), "--policy", "gpufair", "--quiet", "--json", js]
    dec = None
    if decisions:
        fd, dec = tempfile.mkstemp(); os.close(fd)
        args += ["--decisions", dec]
    if seed:
        args += ["--seed", str(seed)]
    for kv in sets:
        args += ["--set", kv]
    subprocess.run(args, check=True)
    with open(js) as f:
        result = json.load(f)
    os.unlink(js)
    first = None
    if dec:
        with open(dec) as f:
            for line in f:
                if " bait=1 " in line and "team=teama" in line:
                    first = int(re.match(r"t=(\d+)", line).group(1))
                    break
        os.unlink(dec)
    return result, first


def honest_figures(results):
    det = pre = 0
    pen = 0.0
    for r in results:
        for t in r["teams"]:
            if t["name"] != r.get("gaming_team"):
                det += t["bait_detections"]
                pre += t["preemptions_caused"]
                pen = max(pen, t["penalty"])
    return det, pre, pen


def score(job):
    sim, seeds, sets = job
    advs, jains, firsts = [], [], []
    for name in GAMING:
        for seed in seeds:
            r, first = run(sim, name, seed, sets, decisions=(name == "gaming-slow"))
            advs.append(r["gaming_advantage"])
            jains.append(r["jain_index"])
            if name == "gaming-slow":
                firsts.append(first if first is not None else float("inf"))
    honest = honest_figures([run(sim, "honest", s, sets)[0] for s in seeds])
    busy = honest_figures([run(sim, "honest-busy", s, sets)[0] for s in seeds])
    return sets, min(advs), min(jains), max(firsts) / 3600, honest, busy


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    sim, seeds, profiles = argv[1], [0, 11, 22], []
    i = 2
    while i < len(argv):
        if argv[i] == "--seeds":
            seeds = [int(s) for s in argv[i + 1].split(",")]
        elif argv[i] == "--profile":
            profiles.append([kv for kv in argv[i + 1].split(",") if kv])
        else:
            print(f"tune_bait.py: unknown argument {argv[i]}", file=sys.stderr)
            return 2
        i += 2
    profiles = profiles or [[]]
    with Pool(min(2, len(profiles))) as pool:
        for sets, min_adv, min_jain, slow, (hd, hp, hpen), (bd, bp, bpen) in pool.imap(
                score, [(sim, seeds, p) for p in profiles]):
            print(f"{','.join(sets) or 'defaults':100s} min_adv={min_adv:.2f} min_jain={min_jain:.3f} slow_first_h={slow:.1f} "
                  f"honest={hd}/{hp} pen={hpen:.2f} busy={bd}/{bp} pen={bpen:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
