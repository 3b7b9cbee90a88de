#!/usr/bin/python3
"""Time-compressed scenarios on the real cluster started by scripts/cluster.

  scenario.py run --scenario exploit|honest [--hour S] [--hours N] [--seed N]
                  --json OUT.json [--label NAME]
  scenario.py table FILE.json...          print the per-team table of each file
  scenario.py svg OUT.svg FILE.json...     chart of queue waits per team
  scenario.py counterfactual GAMING.json HONEST.json [...]
                                           per pair: the gaming team's gain, the others' harm

"An hour" of the story is --hour seconds of real time (default 6). Jobs are
`sleep` jobs submitted with sbatch as the teams' own Linux users.

Scenario 'exploit' (the problem statement): teams B and C submit 4-GPU jobs
steadily and keep the cluster overloaded; team A keeps low-QOS placeholders in
the queue (a new one every hour, from users of teama and its sub-account
teama_nlp) and submits a high-QOS job whenever it needs to run something. Team
B also does honest in-team preemption: now and then it runs a long low job and,
once that job has run for a while, an urgent high job displaces it.
Scenario 'honest': the same workload, but A runs its work as normal jobs and
submits no placeholders.

Measurements come from Slurm itself: per-job submit/start/end of every run of
a job from `sacct -D`, preemptions from slurmctld's log lines ("preempted JobId=X
has been requeued to reclaim resources for JobId=Y"), and for gpufair the
penalty and bait detections from `gpufair-show --json` (when installed).
Jobs that never started by the end of the run are counted with their wait so
far (a lower bound), and reported as pending_at_end.

The JSON schema is gpufair-sim's (same field names and meanings): policy,
teams[name, jobs, started, never_started, gpu_hours, share, gpu_hour_share,
wait_p50_s, wait_p90_s, wait_p99_s, high_wait_p50_s, preemptions_caused,
preemptions_suffered, bait_detections, penalty, ...], jain_index,
utilization, gaming_team, gaming_advantage (+ its definition), cluster_gpus,
jobs, preemptions, sim_seconds, wall_seconds; plus real-cluster extras:
hour_seconds, job_list (every job), preemption_events.
"""
import argparse
import json
import math
import os
import pwd
import random
import re
import shutil
import subprocess
import sys
import time

RUN = os.environ.get("GPUFAIR_RUN_DIR", "/var/tmp/gpufair-cluster")
os.environ.setdefault("SLURM_CONF", os.path.join(RUN, "etc/slurm.conf"))
GPUS_TOTAL = 32
ACCOUNT_TEAM = {"teama": "teama", "teama_nlp": "teama", "teamb": "teamb", "teamc": "teamc"}
USER_ACCOUNT = {"gfa1": "teama", "gfa2": "teama_nlp", "gfb1": "teamb", "gfc1": "teamc"}
SHARES = {"teama": 100, "teamb": 100, "teamc": 100}
TEAMS = ["teama", "teamb", "teamc"]
GAMING_TEAM = "teama"
GAMING_DEFINITION = ("median queue wait of the gaming team's qos=high jobs / median queue wait of every other "
                     "team's jobs (waits under 1 s count as 1 s; jobs still pending at the end count with their "
                     "wait so far); < 1 means gaming pays off, >= 1 means it gains nothing")


def log(msg):
    print(f"[scenario {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def die(msg):
    print(f"[scenario] ERROR: {msg}", file=sys.stderr)
    sys.exit(1)


def sh(args, check=True, user=None, timeout=60):
    kw = {}
    if user:
        pw = pwd.getpwnam(user)
        kw = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd="/tmp", **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def policy_of_cluster():
    """scripts/cluster's policy name (fifo and fairshare both run
    priority/multifactor), else the priority plugin's."""
    state = os.path.join(os.environ.get("GPUFAIR_RUN_DIR", "/var/tmp/gpufair-cluster"), "cluster.state")
    try:
        m = re.search(r"^POLICY=(\S+)$", open(state).read(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    out = sh(["scontrol", "show", "config"])
    m = re.search(r"^PriorityType\s*=\s*priority/(\S+)", out, re.M)
    return m.group(1) if m else "unknown"


# --- the workload ------------------------------------------------------------


class Job:
    def __init__(self, t, user, qos, gpus, runtime, kind):
        self.t, self.user, self.qos, self.gpus, self.runtime, self.kind = t, user, qos, gpus, runtime, kind
        self.account = USER_ACCOUNT[user]
        self.team = ACCOUNT_TEAM[self.account]
        self.job_id = None
        self.submitted_at = None
        self.after = None  # (kind, min_run_s): submit once that job has run this long

    def to_dict(self):
        return dict(job_id=self.job_id, team=self.team, account=self.account, user=self.user,
                    qos=self.qos, gpus=self.gpus, runtime_s=self.runtime, kind=self.kind)


def workload(name, hour, hours, seed):
    """The list of jobs to submit, with submit offsets in seconds."""
    rnd = random.Random(seed)
    H = float(hour)
    end = hours * H
    jobs = []

    def steady(user, qos, kind, every_h, run_h, start=0.0):
        t = start
        while t < end:
            rt = max(2, round(run_h * H * rnd.uniform(0.8, 1.2)))
            jobs.append(Job(round(t, 2), user, qos, 4, rt, kind))
            t += every_h * H * rnd.uniform(0.7, 1.3)

    # Honest teams B and C: an initial backlog, then a 4-hour 4-GPU job every
    # hour each: on their own they keep the whole cluster busy.
    for user in ("gfb1", "gfc1"):
        for i in range(2):
            jobs.append(Job(0.0, user, "normal", 4, round(4 * H), "work"))
        steady(user, "normal", "work", 1.3, 4, start=0.25 * H)
    if name == "exploit":
        # A's placeholders: 2 in the queue from the start, then one every
        # hour, alternating between teama and its sub-account teama_nlp.
        # They run "forever" unless preempted (and are requeued when they are).
        for i in range(2):
            jobs.append(Job(0.0, "gfa1" if i % 2 == 0 else "gfa2", "low", 4, 100 * round(H), "bait"))
        t = H
        i = 0
        while t < end:
            jobs.append(Job(t, "gfa2" if i % 2 == 0 else "gfa1", "low", 4, 100 * round(H), "bait"))
            t += H
            i += 1
        # A's real work: a 4-hour high-QOS job every ~2.5 hours.
        steady("gfa1", "high", "work", 2.5, 4, start=1.5 * H)
    elif name == "honest":
        steady("gfa1", "normal", "work", 2.5, 4, start=1.5 * H)
    else:
        die(f"unknown scenario {name}")
    # B's honest in-team preemption: a long low job; once it has run for 3
    # hours an urgent high job of B displaces it. Twice.
    for k, t in enumerate((0.5 * H, 3 * H)):
        long = Job(t, "gfb1", "low", 4, round(30 * H), f"long{k}")
        urgent = Job(None, "gfb1", "high", 4, round(2 * H), "urgent")
        urgent.after = (f"long{k}", 3 * H)
        jobs += [long, urgent]
    timed = sorted([j for j in jobs if j.t is not None], key=lambda j: j.t)
    return timed, [j for j in jobs if j.t is None]


def submit(job):
    name = f"{job.team}-{job.kind}"
    args = ["sbatch", "--parsable", "-A", job.account, "--qos", job.qos, "-J", name,
            f"--gres=gpu:{job.gpus}", "-n1", "-c1", "--mem=100", "-t", "60", "-o", "/dev/null",
            "-D", "/tmp", f"--wrap=sleep {job.runtime}"]
    out = sh(args, user=job.user)
    job.job_id = int(out.strip().split(";")[0])
    job.submitted_at = time.time()


def snapshot(path):
    """What users see mid-run: sprio, sshare, squeue (and gpufair-show on gpufair)."""
    parts = []
    cmds = [["sprio", "-l"], ["sshare", "-l"], ["squeue", "-o", "%.6i %.10a %.6q %.8u %.2t %.8M %.12r %Q"]]
    tool = find_gpufair_show()
    if tool and policy_of_cluster() == "gpufair":
        cmds += [[tool], [tool, "--json"]]
    for c in cmds:
        p = subprocess.run(c, capture_output=True, text=True)
        parts.append(f"$ {' '.join(c)}\n{p.stdout}{p.stderr}")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def run_workload(timed, deferred, duration, drain, snap=None):
    t0 = time.time()
    snap_at, snap_path = snap if snap else (None, None)
    pending_deferred = list(deferred)
    done_deferred = []
    i = 0
    last_poll = 0
    while True:
        now = time.time() - t0
        while i < len(timed) and timed[i].t <= now:
            submit(timed[i])
            i += 1
        if pending_deferred and now - last_poll >= 1.0:
            last_poll = now
            by_kind = {j.kind: j for j in timed if j.job_id}
            out = sh(["squeue", "-h", "-t", "R", "-o", "%i %M"], check=False)
            running = {}
            for line in out.splitlines():
                jid, el = line.split()
                running[int(jid)] = parse_elapsed(el)
            for d in list(pending_deferred):
                kind, min_run = d.after
                base = by_kind.get(kind)
                if base and running.get(base.job_id, -1) >= min_run:
                    submit(d)
                    d.t = round(d.submitted_at - t0, 2)
                    done_deferred.append(d)
                    pending_deferred.remove(d)
        if snap_at is not None and now >= snap_at:
            snapshot(snap_path)
            log(f"snapshot of sprio/sshare/squeue at {now:.0f}s: {snap_path}")
            snap_at = None
        if now >= duration + drain:
            break
        nxt = timed[i].t if i < len(timed) else duration + drain
        time.sleep(max(0.02, min(0.25, nxt - now)))
    t_end = time.time()
    return t0, t_end, [j for j in timed + done_deferred if j.job_id]


def parse_elapsed(s):
    days = 0
    if "-" in s:
        d, s = s.split("-", 1)
        days = int(d)
    parts = [int(x) for x in s.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


# --- measurement -------------------------------------------------------------


def ts(s):
    if s in ("Unknown", "None", "", None):
        return None
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))


def cancel_and_settle(jobs):
    ids = [str(j.job_id) for j in jobs]
    for k in range(0, len(ids), 200):
        sh(["scancel"] + ids[k:k + 200], check=False)
    for _ in range(200):
        if not sh(["squeue", "-h", "-o", "%i"], check=False).strip():
            break
        time.sleep(0.1)
    # slurmdbd gets job records asynchronously: wait until no run is open.
    for _ in range(100):
        rows = sacct_rows(jobs)
        if rows and not any(r["State"] in ("RUNNING", "PENDING", "REQUEUED") and r["End"] == "Unknown"
                            for r in rows):
            return rows
        time.sleep(0.2)
    return sacct_rows(jobs)


def sacct_rows(jobs):
    fields = ["JobIDRaw", "Account", "QOS", "Submit", "Start", "End", "State", "AllocTRES", "ElapsedRaw"]
    ids = ",".join(str(j.job_id) for j in jobs)
    out = sh(["sacct", "-D", "-X", "-P", "-n", "-j", ids, "-o", ",".join(fields)], check=False)
    rows = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == len(fields):
            rows.append(dict(zip(fields, parts)))
    return rows


def preemptions_from_log(ids, since):
    """(victim, preemptor, when) from slurmctld's log, for our jobs."""
    pat = re.compile(r"^\[(\S+?)(?:\.\d+)?\] preempted JobId=(\d+) has been \w+ to reclaim resources for JobId=(\d+)")
    events = []
    try:
        with open(os.path.join(RUN, "log/slurmctld.log"), errors="replace") as f:
            for line in f:
                m = pat.match(line)
                if m and int(m.group(2)) in ids and int(m.group(3)) in ids:
                    when = ts(m.group(1))
                    if when is None or when >= since - 1:
                        events.append((int(m.group(2)), int(m.group(3)), when))
    except FileNotFoundError:
        pass
    return events


def find_gpufair_show():
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for c in [shutil.which("gpufair-show")] + [os.path.join(here, d, "tools/gpufair-show")
                                                 for d in ("build", "build-e2e", "build-demo")]:
        if c and os.access(c, os.X_OK):
            return c
    return None


def gpufair_teams():
    """{team: {penalty, bait_detections}} from gpufair-show --json, or None."""
    tool = find_gpufair_show()
    state = os.path.join(RUN, "var/state/gpufair.state")
    if not tool:
        return None, "gpufair-show not found"
    p = subprocess.run([tool, "--json", state], capture_output=True, text=True)
    if p.returncode != 0:
        p = subprocess.run([tool, "--json", "--state", state], capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"gpufair-show failed: {p.stderr.strip()[:200]}"
    try:
        data = json.loads(p.stdout)
    except ValueError as e:
        return None, f"gpufair-show --json: not JSON ({e})"
    teams = data.get("teams", data) if isinstance(data, dict) else data
    res = {}
    for t in teams:
        res[t.get("name")] = dict(penalty=float(t.get("penalty", 0.0)),
                                  bait_detections=int(t.get("bait_detections", 0)))
    return res, None


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def measure(policy, scenario, hour, t0, t_end, jobs, rows, wall_start):
    by_id = {j.job_id: j for j in jobs}
    runs = {}
    for r in rows:
        runs.setdefault(int(r["JobIDRaw"]), []).append(r)
    per_job = []
    gpu_s_total = 0.0
    for j in jobs:
        rr = runs.get(j.job_id, [])
        starts = [ts(r["Start"]) for r in rr if ts(r["Start"])]
        submit_t = min([ts(r["Submit"]) for r in rr if ts(r["Submit"])] or [round(j.submitted_at)])
        first_start = min(starts) if starts else None
        gpu_s = 0.0
        for r in rr:
            s, e = ts(r["Start"]), ts(r["End"])
            if s is None:
                continue
            e = min(e if e else t_end, t_end)
            m = re.search(r"gres/gpu=(\d+)", r["AllocTRES"])
            g = int(m.group(1)) if m else 0
            gpu_s += g * max(0.0, e - s)
        gpu_s_total += gpu_s
        started = first_start is not None
        wait = (first_start - submit_t) if started else max(0.0, t_end - submit_t)
        per_job.append(dict(j.to_dict(), submit=submit_t, first_start=first_start, started=started,
                            wait_s=wait, runs=len(rr), gpu_seconds=gpu_s))
    ids = set(by_id)
    events = preemptions_from_log(ids, t0)
    gf, gf_err = (gpufair_teams() if policy == "gpufair" else (None, None))
    teams = []
    for team in TEAMS:
        tj = [p for p in per_job if p["team"] == team]
        waits = [p["wait_s"] for p in tj]
        high = [p["wait_s"] for p in tj if p["qos"] == "high"]
        work = [p["wait_s"] for p in tj if p["kind"] in ("work", "urgent")]
        caused = sum(1 for v, pr, _ in events if by_id[pr].team == team)
        suffered = sum(1 for v, pr, _ in events if by_id[v].team == team)
        cross = sum(1 for v, pr, _ in events if by_id[pr].team == team and by_id[v].team != team)
        gpu_s = sum(p["gpu_seconds"] for p in tj)
        entry = dict(name=team, jobs=len(tj), started=sum(1 for p in tj if p["started"]),
                     never_started=sum(1 for p in tj if not p["started"]), high_jobs=len(high),
                     shares=SHARES[team], share=round(SHARES[team] / sum(SHARES.values()), 4),
                     gpu_hours=round(gpu_s / 3600, 4), story_gpu_hours=round(gpu_s / hour, 1),
                     wait_p50_s=pct(waits, 0.5), wait_p90_s=pct(waits, 0.9), wait_p99_s=pct(waits, 0.99),
                     high_wait_p50_s=pct(high, 0.5), high_wait_p90_s=pct(high, 0.9),
                     work_wait_p50_s=pct(work, 0.5), work_wait_p90_s=pct(work, 0.9),
                     preemptions_caused=caused, preemptions_suffered=suffered,
                     cross_team_preemptions=cross,
                     pending_at_end=sum(1 for p in tj if not p["started"]),
                     bait_detections=None, penalty=None)
        if policy != "gpufair":
            entry["bait_detections"], entry["penalty"] = 0, 0.0
        elif gf is not None:
            g = gf.get(team, {})
            entry["bait_detections"] = g.get("bait_detections", 0)
            entry["penalty"] = round(g.get("penalty", 0.0), 4)
        teams.append(entry)
    total_h = sum(t["gpu_hours"] for t in teams)
    for t in teams:
        t["gpu_hour_share"] = round(t["gpu_hours"] / total_h, 4) if total_h else None
    x = [t["gpu_hours"] / t["shares"] for t in teams]
    jain = (sum(x) ** 2) / (len(x) * sum(v * v for v in x)) if any(x) else None
    span = t_end - t0
    # As the simulator: waits under 1 s count as 1 s; unstarted jobs count
    # with their wait so far.
    gaming_high = pct([max(1.0, p["wait_s"]) for p in per_job
                       if p["team"] == GAMING_TEAM and p["qos"] == "high"], 0.5)
    others_p50 = pct([max(1.0, p["wait_s"]) for p in per_job if p["team"] != GAMING_TEAM], 0.5)
    adv = (gaming_high / others_p50) if (gaming_high is not None and others_p50) else None
    return dict(policy=policy, source="real-cluster", scenario=scenario, hour_seconds=hour,
                teams=teams, jain_index=None if jain is None else round(jain, 4),
                utilization=round(gpu_s_total / (GPUS_TOTAL * span), 4),
                gaming_team=GAMING_TEAM,
                gaming_advantage=None if adv is None else round(adv, 4),
                gaming_high_wait_p50_s=gaming_high, others_wait_p50_s=others_p50,
                gaming_advantage_definition=GAMING_DEFINITION,
                cluster_gpus=GPUS_TOTAL, jobs=len(per_job), preemptions=len(events),
                sim_seconds=round(span, 1), wall_seconds=round(time.time() - wall_start, 1),
                gpufair_show_error=gf_err,
                preemption_events=[dict(victim=v, preemptor=p, when=w) for v, p, w in events],
                job_list=per_job)


# --- output -----------------------------------------------------------------


def fmt(v, nd=0):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def counterfactual(gaming, honest, gamer="teama"):
    """Judged by the counterfactual (sim/counterfactual.h; here waits under
    1 s count as 1 s): gain = the gamer's real-work wait honest / gaming at
    p50 and p90 (> 1: gaming paid), harm = each other team's median wait
    gaming / honest. Returns (gain50, gain90, {team: harm50}, text)."""
    def teams(r):
        return {t["name"]: t for t in r["teams"]}

    def ratio(x, y):
        return max(x or 0, 1.0) / max(y or 0, 1.0)
    tg, th = teams(gaming), teams(honest)
    a, ah = tg[gamer], th[gamer]
    g50 = ratio(ah["work_wait_p50_s"], a["work_wait_p50_s"])
    g90 = ratio(ah["work_wait_p90_s"], a["work_wait_p90_s"])
    harm = {n: ratio(t["wait_p50_s"], th[n]["wait_p50_s"]) for n, t in tg.items() if n != gamer}
    paid = not all(g >= 0.95 * h or h - g <= 1.0 for g, h in
                   ((a["work_wait_p50_s"], ah["work_wait_p50_s"]), (a["work_wait_p90_s"], ah["work_wait_p90_s"])))
    text = (f'{gaming["policy"]}: A\'s real work p50/p90 {a["work_wait_p50_s"]:.1f}/{a["work_wait_p90_s"]:.1f} s '
            f'gaming vs {ah["work_wait_p50_s"]:.1f}/{ah["work_wait_p90_s"]:.1f} s honest: gain {g50:.2f}/{g90:.2f} '
            f'({"GAMING PAID" if paid else "gaming did not pay"}); harm p50 '
            + ", ".join(f"{n} {v:.2f}" for n, v in sorted(harm.items()))
            + f'; gaming advantage {fmt(gaming["gaming_advantage"], 2)}')
    return g50, g90, harm, text


def table(res):
    lines = [f"policy: {res['policy']}   scenario: {res['scenario']}   (1 story hour = {res['hour_seconds']} s; "
             f"run {res['sim_seconds']} s)"]
    hdr = f"{'team':8} {'jobs':>5} {'GPU-h':>7} {'wait p50':>9} {'wait p90':>9} {'high p50':>9} " \
          f"{'work p50':>9} {'preempt':>9} {'bait':>5} {'penalty':>8} {'unstarted':>9}"
    lines += [hdr, "-" * len(hdr)]
    for t in res["teams"]:
        lines.append(f"{t['name']:8} {t['jobs']:>5} {fmt(t['gpu_hours'], 3):>7} {fmt(t['wait_p50_s'], 1):>9} "
                     f"{fmt(t['wait_p90_s'], 1):>9} {fmt(t['high_wait_p50_s'], 1):>9} "
                     f"{fmt(t['work_wait_p50_s'], 1):>9} "
                     f"{str(t['preemptions_caused']) + '/' + str(t['preemptions_suffered']):>9} "
                     f"{fmt(t['bait_detections']):>5} {fmt(t['penalty'], 2):>8} {t['pending_at_end']:>9}")
    lines.append(f"waits in seconds; preempt = caused/suffered; unstarted = never started by the end (counted "
                 f"with their wait so far)")
    lines.append(f"GPU utilisation {res['utilization']:.2f}; Jain index {fmt(res['jain_index'], 3)} "
                 f"(share-normalised GPU-hours); gaming advantage of {res['gaming_team']} "
                 f"{fmt(res['gaming_advantage'], 2)} = its high jobs' median wait "
                 f"{fmt(res['gaming_high_wait_p50_s'], 1)} s / other teams' median wait "
                 f"{fmt(res['others_wait_p50_s'], 1)} s (< 1: gaming pays off; >= 1: it gains nothing)")
    if res.get("gpufair_show_error"):
        lines.append(f"note: penalty/bait unavailable: {res['gpufair_show_error']}")
    return "\n".join(lines)


def svg(out, results):
    """Grouped chart: per team, each policy's job waits (dots), median (bar) and p90 (tick)."""
    colors = {"fifo": "#8e6c8a", "fairshare": "#e0a030", "multifactor": "#d9534f", "gpufair": "#2a7ab0"}
    W, H, left, top, bottom = 760, 420, 70, 56, 70
    series = []
    for res in results:
        for t in res["teams"]:
            jobs = [j for j in res["job_list"] if j["team"] == t["name"] and j["kind"] in ("work", "urgent")]
            series.append((t["name"], res["policy"], [j["wait_s"] for j in jobs],
                           [j["started"] for j in jobs]))
    ymax = max([max(s[2]) for s in series if s[2]] + [10])
    ymax = math.ceil(ymax / 10) * 10
    plot_h = H - top - bottom
    n_pol = len(results)
    group_w = (W - left - 20) / len(TEAMS)
    bar_w = min(60, group_w / (n_pol + 1))
    y = lambda v: top + plot_h - plot_h * v / ymax
    e = []
    e.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">')
    e.append(f'<rect width="{W}" height="{H}" fill="white"/>')
    e.append(f'<text x="{W/2}" y="22" text-anchor="middle" font-size="15">Queue wait of real work per team '
             f'(the exploit scenario on a real 4x8-GPU Slurm cluster)</text>')
    for k in range(6):
        v = ymax * k / 5
        e.append(f'<line x1="{left}" x2="{W-20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{left-6}" y="{y(v)+4:.1f}" text-anchor="end">{v:.0f}</text>')
    e.append(f'<text x="16" y="{top+plot_h/2}" transform="rotate(-90 16 {top+plot_h/2})" text-anchor="middle">'
             f'wait until first start (s)</text>')
    rnd = random.Random(1)
    for gi, team in enumerate(TEAMS):
        gx = left + gi * group_w + (group_w - n_pol * bar_w) / 2
        label = team + (" (gaming: high-QOS jobs)" if team == GAMING_TEAM else "")
        e.append(f'<text x="{left + gi*group_w + group_w/2:.1f}" y="{H-bottom+20}" text-anchor="middle">{label}</text>')
        for pi, res in enumerate(results):
            waits, started = next((s[2], s[3]) for s in series if s[0] == team and s[1] == res["policy"])
            c = colors.get(res["policy"], "#888")
            x0 = gx + pi * bar_w
            med, p90 = pct(waits, 0.5), pct(waits, 0.9)
            if med is not None:
                e.append(f'<rect x="{x0+4:.1f}" y="{y(med):.1f}" width="{bar_w-8:.1f}" '
                         f'height="{y(0)-y(med):.1f}" fill="{c}" fill-opacity="0.35" stroke="{c}"/>')
                e.append(f'<text x="{x0+bar_w/2:.1f}" y="{y(med)-4:.1f}" text-anchor="middle" '
                         f'font-size="10">{med:.0f}</text>')
            if p90 is not None:
                e.append(f'<line x1="{x0+10:.1f}" x2="{x0+bar_w-10:.1f}" y1="{y(p90):.1f}" y2="{y(p90):.1f}" '
                         f'stroke="{c}" stroke-width="2" stroke-dasharray="3,2"/>')
            for w, st in zip(waits, started):
                jx = x0 + bar_w / 2 + rnd.uniform(-bar_w / 4, bar_w / 4)
                fill = c if st else "white"
                e.append(f'<circle cx="{jx:.1f}" cy="{y(w):.1f}" r="2.2" fill="{fill}" stroke="{c}" stroke-width="0.8"/>')
    lx = left
    for res in results:
        c = colors.get(res["policy"], "#888")
        adv = res.get("gaming_advantage")
        e.append(f'<rect x="{lx}" y="{H-28}" width="12" height="12" fill="{c}" fill-opacity="0.5" stroke="{c}"/>')
        e.append(f'<text x="{lx+18}" y="{H-18}">{res["policy"]} (gaming advantage {fmt(adv, 2)})</text>')
        lx += 300
    e.append(f'<text x="{W-20}" y="40" text-anchor="end" font-size="10">bar = median, dashed = p90, '
             f'dot = one job (hollow: not started by the end; wait so far)</text>')
    e.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(e) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--scenario", default="exploit", choices=["exploit", "honest"])
    r.add_argument("--hour", type=float, default=6.0, help="seconds per story hour")
    r.add_argument("--hours", type=float, default=18, help="story hours of submissions")
    r.add_argument("--drain", type=float, default=None, help="seconds after the last submission (default 2 hours)")
    r.add_argument("--seed", type=int, default=7)
    r.add_argument("--json", required=True)
    r.add_argument("--snapshot", help="file for a mid-run snapshot of sprio -l, sshare -l, squeue, gpufair-show")
    r.add_argument("--snapshot-at", type=float, help="seconds into the run (default 80%% of the submissions)")
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    s = sub.add_parser("svg")
    s.add_argument("out")
    s.add_argument("files", nargs="+")
    c = sub.add_parser("counterfactual")
    c.add_argument("pairs", nargs="+", help="GAMING.json HONEST.json, per policy")
    a = ap.parse_args()
    if a.cmd == "counterfactual":
        if len(a.pairs) % 2:
            die("counterfactual takes pairs: GAMING.json HONEST.json ...")
        print("judged by the counterfactual (the same story with team A honest; waits under 1 s count as 1 s):")
        for g, h in zip(a.pairs[::2], a.pairs[1::2]):
            print("  " + counterfactual(json.load(open(g)), json.load(open(h)))[3])
        print("gain = A's real work waits honest / gaming (> 1: gaming paid); harm = B's and C's "
              "median waits gaming / honest; gaming advantage = A's high jobs' median wait / the "
              "others' (< 1: A jumps the queue)")
        return
    if a.cmd == "table":
        for f in a.files:
            print(table(json.load(open(f))))
            print()
        return
    if a.cmd == "svg":
        svg(a.out, [json.load(open(f)) for f in a.files])
        return
    wall0 = time.time()
    try:
        policy = policy_of_cluster()
    except Exception as e:
        die(f"no cluster answers (run scripts/cluster up first): {e}")
    if sh(["squeue", "-h", "-o", "%i"], check=False).strip():
        die("the cluster's queue is not empty; run on a fresh cluster (scripts/cluster up)")
    timed, deferred = workload(a.scenario, a.hour, a.hours, a.seed)
    duration = a.hours * a.hour
    drain = a.drain if a.drain is not None else 2 * a.hour
    log(f"policy {policy}: scenario {a.scenario}, {len(timed) + len(deferred)} jobs over {duration:.0f}s "
        f"(+{drain:.0f}s), 1 story hour = {a.hour}s")
    snap = None
    if a.snapshot:
        snap = (a.snapshot_at if a.snapshot_at is not None else 0.8 * duration, a.snapshot)
    t0, t_end, jobs = run_workload(timed, deferred, duration, drain, snap)
    log(f"submitted {len(jobs)} jobs; cancelling what is left and collecting sacct")
    rows = cancel_and_settle(jobs)
    res = measure(policy, a.scenario, a.hour, t0, t_end, jobs, rows, wall0)
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    print(table(res))
    log(f"wrote {a.json}")


if __name__ == "__main__":
    main()
