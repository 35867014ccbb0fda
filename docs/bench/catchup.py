#!/usr/bin/env python3
"""Peak RSS of the leader and of a restarted follower while it catches up by snapshot.
usage: catchup.py KUORUM_BIN OUT_JSON [N_OBJECTS] [SIZE]   (SNAP=snapshot count, TRACE=1 prints a timeline)"""
import urllib.error, json, os, shutil, signal, subprocess, sys, tempfile, threading, time, urllib.request

BIN, OUT = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 40000
SIZE = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
root = tempfile.mkdtemp(prefix="catchup-")
base = 23000 + (os.getpid() % 500) * 10
rest = {i: base + i for i in (1, 2, 3)}
peer = {i: base + 5 + i for i in (1, 2, 3)}
peers = ",".join(f"{i}=127.0.0.1:{peer[i]}" for i in (1, 2, 3))
procs = {}

def start(i):
    args = [BIN, "serve", "--id", str(i), "--listen", f"127.0.0.1:{rest[i]}", "--peer-listen", f"127.0.0.1:{peer[i]}",
            "--peers", peers, "--data-dir", f"{root}/n{i}", "--insecure",
            "--snapshot-count", os.environ.get("SNAP", "10000"), "--snapshot-catchup-entries", "1000"]
    log = open(f"{root}/n{i}.log", "ab")
    procs[i] = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

def get(i, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{rest[i]}{path}", timeout=5) as r:
        return json.loads(r.read())

def raft(i):
    try:
        return get(i, "/debug/kuorum/raft")
    except Exception:
        return None

def rss_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except Exception:
        return 0.0
    return 0.0

try:
    for i in (1, 2, 3):
        start(i)
    leader = None
    for _ in range(200):
        v = [raft(i) for i in (1, 2, 3)]
        ls = [i for i, x in zip((1, 2, 3), v) if x and x.get("leader") == i]
        if ls:
            leader = ls[0]
            break
        time.sleep(0.1)
    assert leader, "no leader"
    for _ in range(200):
        try:
            get(leader, "/api/v1/namespaces/default")
            break
        except Exception:
            time.sleep(0.1)
    behind = [i for i in (1, 2, 3) if i != leader][0]
    procs[behind].send_signal(signal.SIGKILL); procs[behind].wait()
    pad = "x" * SIZE
    url = f"http://127.0.0.1:{rest[leader]}/api/v1/namespaces/default/configmaps"
    nxt = [0]; lock = threading.Lock()
    def worker():
        while True:
            with lock:
                k = nxt[0]; nxt[0] += 1
            if k >= N:
                return
            body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{k}"}, "data": {"p": pad}}).encode()
            req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
            for attempt in range(20):
                try:
                    urllib.request.urlopen(req, timeout=30).read()
                    break
                except urllib.error.HTTPError as e:
                    if e.code == 409:
                        break
                    time.sleep(0.2)
    t0 = time.time()
    ts = [threading.Thread(target=worker) for _ in range(32)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(f"created {N} x {SIZE} B in {time.time()-t0:.1f} s", flush=True)
    time.sleep(3)
    lv = raft(leader)
    print("leader:", {k: lv.get(k) for k in ("snapshot", "last_applied", "last_log_index")}, flush=True)
    lpid = procs[leader].pid
    leader_before = rss_mb(lpid)
    start(behind)
    fpid = procs[behind].pid
    peak_l, peak_f, t0 = leader_before, 0.0, time.time()
    target = lv.get("last_applied") or 0
    done = None
    installed_at = None
    while time.time() - t0 < 120:
        peak_l = max(peak_l, rss_mb(lpid)); peak_f = max(peak_f, rss_mb(fpid))
        v = raft(behind)
        if os.environ.get("TRACE"):  # a timeline of the follower: s, RSS MB, applied, snapshot
            print(f"{time.time() - t0:6.2f} {rss_mb(fpid):7.0f} {v and v.get('last_applied')} {v and v.get('snapshot')}", flush=True)
        if v and v.get("snapshot") and installed_at is None:
            installed_at = (time.time() - t0, peak_f, rss_mb(fpid), peak_l)
        if v and (v.get("last_applied") or 0) >= target and done is None:
            done = time.time() - t0
        if done is not None and time.time() - t0 > done + 1.0:
            break
        time.sleep(0.05)
    fv = raft(behind)
    du = subprocess.run(["du", "-sm", f"{root}/n{leader}/objects"], capture_output=True, text=True).stdout.split()[0]
    res = {"bin": BIN, "objects": N, "size": SIZE, "leader_rss_before_mb": leader_before, "leader_peak_mb": peak_l,
           "follower_peak_mb": peak_f, "catchup_s": done, "follower_snapshot": fv and fv.get("snapshot"),
           "installed": installed_at and {"s": installed_at[0], "follower_peak_mb": installed_at[1], "follower_rss_mb": installed_at[2], "leader_peak_mb": installed_at[3]},
           "leader_objects_dir_mb": int(du)}
    print(json.dumps(res), flush=True)
    json.dump(res, open(OUT, "w"))
finally:
    for p in procs.values():
        p.send_signal(signal.SIGKILL)
    for p in procs.values():
        p.wait()
    shutil.rmtree(root, ignore_errors=True)
