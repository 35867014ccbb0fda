//! Chaos mode on real processes: `kuorum serve --enable-chaos` and the `kuorum chaos` CLI.
//!
//! Without the flag the admin endpoint is absent and the CLI says so. With it, each fault
//! does what it claims and only on the node it was set on: errors answered instead of (or
//! after) serving — a 429 with `Retry-After`, a 503 whose write happened or did not —
//! while health and metrics keep answering; watch strikes that end a stream with a 410
//! Expired ERROR event or cut it without one; a paused apply that leaves one node's Any
//! reads stale (but never its consistent reads) until cleared; added latency; and
//! settings that make no sense refused with 422. Every injected fault shows in
//! `kuorum_chaos_faults_injected_total{fault}`.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::{configmap, eventually, Cluster, ClusterOptions, Http};
use serde_json::{json, Value};

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

/// Starts `n` nodes with `--enable-chaos`; `None` when there is no binary to test.
fn start_chaos(n: usize) -> Option<Cluster> {
    Cluster::start_opts_or_skip(ClusterOptions {
        nodes: n,
        extra_args: vec!["--enable-chaos".into()],
        ..Default::default()
    })
}

/// `kuorum chaos ARGS --server SERVERS`: its stdout, or its error (with its stderr).
fn chaos(c: &Cluster, servers: &str, args: &[&str]) -> anyhow::Result<String> {
    let mut full = vec!["chaos"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--server", servers]);
    c.cli(&full)
}

/// `kuorum_chaos_faults_injected_total{fault}` on node `id` (0 while never counted).
fn injected(c: &Cluster, id: u64, fault: &str) -> u64 {
    let r = c.http().get(&format!("{}/metrics", c.url(id))).unwrap();
    assert_eq!(r.status, 200, "/metrics: {}", r.text);
    let prefix = format!("kuorum_chaos_faults_injected_total{{fault=\"{fault}\"}} ");
    r.text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0, |v| v.trim().parse().unwrap())
}

/// A plain client whose replies keep their headers.
fn raw_client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(10)).build().unwrap()
}

/// The `Status` body of an error reply, checked to carry `code`; answers its reason.
fn status_reason(body: &Value, code: u16) -> String {
    assert_eq!(body["kind"], "Status", "not a Status: {body}");
    assert_eq!(body["code"], code, "{body}");
    body["reason"].as_str().unwrap_or_default().to_string()
}

// ---------------------------------------------------------------------------------------
// Watch streams read on a thread
// ---------------------------------------------------------------------------------------

/// What a watch stream's reader saw next.
#[derive(Debug)]
enum Seen {
    /// One event line, parsed.
    Event(Value),
    /// The body ended cleanly.
    End,
    /// Reading the body failed (the connection was cut mid-stream).
    Broken(String),
}

/// A raw watch whose lines arrive on a channel.
struct WatchStream {
    rx: mpsc::Receiver<Seen>,
}

impl WatchStream {
    /// Opens `GET url` (a watch) and starts reading it; fails unless it answers 200.
    fn open(url: &str) -> WatchStream {
        // No overall timeout: the stream ends when the server ends it (or the test does).
        let client =
            reqwest::blocking::Client::builder().timeout(None).connect_timeout(Duration::from_secs(2)).build().unwrap();
        let resp = client.get(url).send().unwrap();
        assert_eq!(resp.status(), 200, "watch {url}");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut body = BufReader::new(resp);
            loop {
                let mut line = String::new();
                let seen = match body.read_line(&mut line) {
                    Ok(0) => Seen::End,
                    Ok(_) if line.trim().is_empty() => continue,
                    Ok(_) => Seen::Event(
                        serde_json::from_str(line.trim())
                            .unwrap_or_else(|e| json!({"bad": e.to_string(), "line": line})),
                    ),
                    Err(e) => Seen::Broken(e.to_string()),
                };
                let last = !matches!(seen, Seen::Event(_));
                if tx.send(seen).is_err() || last {
                    return;
                }
            }
        });
        WatchStream { rx }
    }

    /// The next thing seen within `timeout` (panics if nothing comes).
    fn next(&self, timeout: Duration, what: &str) -> Seen {
        self.rx
            .recv_timeout(timeout)
            .unwrap_or_else(|e| panic!("watch: nothing within {timeout:?} ({e}) while waiting for {what}"))
    }

    /// Every event until the stream ends, and how it ended.
    fn until_end(&self, timeout: Duration) -> (Vec<Value>, Seen) {
        let deadline = Instant::now() + timeout;
        let mut events = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Seen::Event(e)) => events.push(e),
                Ok(end) => return (events, end),
                Err(e) => panic!("watch still open {timeout:?} after the strike ({e}); events: {events:?}"),
            }
        }
    }
}

/// Strikes node `id`'s open watches with `kuorum chaos watches ACTION`; answers how many
/// watches the node said were open.
fn strike(c: &Cluster, id: u64, action: &str) -> u64 {
    let out = chaos(c, &c.url(id), &["watches", action]).unwrap();
    let reply: Value = out
        .split_once(": ")
        .and_then(|(_, v)| serde_json::from_str(v.trim()).ok())
        .unwrap_or_else(|| panic!("kuorum chaos watches {action}: unexpected output {out:?}"));
    reply["openWatches"].as_u64().unwrap_or_else(|| panic!("no openWatches in {out:?}"))
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn without_enable_chaos_there_is_no_chaos_endpoint_and_the_cli_says_why() {
    let Some(c) = Cluster::start_or_skip(1) else { return };
    let url = c.url(1);
    for args in [&["show"][..], &["set", "--error-rate", "1"], &["watches", "expire"], &["clear"]] {
        let err = format!("{:#}", chaos(&c, &url, args).unwrap_err());
        assert!(err.contains("--enable-chaos"), "kuorum chaos {args:?}: the error does not name the flag: {err}");
        assert!(err.contains(&url), "kuorum chaos {args:?}: the error does not name the server: {err}");
    }
    let http = c.http();
    assert_eq!(http.get(&format!("{url}/kuorum/v1/chaos")).unwrap().status, 404);
    assert_eq!(http.put(&format!("{url}/kuorum/v1/chaos"), &json!({"errorRate": 1})).unwrap().status, 404);
    let strike = json!({"action": "Expire", "fraction": 1});
    assert_eq!(http.post(&format!("{url}/kuorum/v1/chaos/watches"), &strike).unwrap().status, 404);
    // Nothing was injected: the API answers as usual.
    assert_eq!(http.get(&format!("{url}{CM_PATH}")).unwrap().status, 200);
}

#[test]
fn injected_errors_hit_only_their_node_and_after_serving_the_write_happened() {
    let Some(c) = start_chaos(3) else { return };
    let http = c.http();
    let (n1, n2) = (c.url(1), c.url(2));
    let list = format!("{n1}{CM_PATH}");

    let out = chaos(&c, &n1, &["set", "--error-rate", "1", "--error-code", "429"]).unwrap();
    assert!(out.contains(&n1) && out.contains("\"errorRate\":1"), "{out}");
    let shown = chaos(&c, &n1, &["show"]).unwrap();
    assert!(shown.contains("\"errorRate\":1") && shown.contains("\"errorCode\":429"), "{shown}");

    let resp = raw_client().get(&list).header("Accept", "application/json").send().unwrap();
    assert_eq!(resp.status(), 429);
    let retry_after = resp.headers().get("Retry-After").map(|v| v.to_str().unwrap().to_string());
    assert_eq!(retry_after.as_deref(), Some("1"), "Retry-After of an injected 429");
    let body: Value = resp.json().unwrap();
    assert_eq!(status_reason(&body, 429), "TooManyRequests");
    assert!(injected(&c, 1, "error_429") >= 1);

    // Faults are per node; health and metrics are never hit.
    let r = http.get(&format!("{n2}{CM_PATH}")).unwrap();
    assert_eq!(r.status, 200, "node 2 has no faults: {}", r.text);
    assert_eq!(injected(&c, 2, "error_429"), 0);
    assert_eq!(http.get(&format!("{n1}/healthz")).unwrap().status, 200);
    assert_eq!(http.get(&format!("{n1}/readyz")).unwrap().status, 200);
    // Writes too are refused, before anything is done: the object never exists.
    let r = http.post(&list, &configmap("default", "refused", json!({}))).unwrap();
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(http.get(&format!("{n2}{CM_PATH}/refused")).unwrap().status, 404);
    let before = injected(&c, 1, "error_429");
    assert!(before >= 2, "two 429s answered, {before} counted");

    // `clear` on every server given: node 1 serves again.
    let all = c.urls().join(",");
    let out = chaos(&c, &all, &["clear"]).unwrap();
    assert_eq!(out.lines().count(), 3, "one line per server: {out}");
    let r = http.get(&list).unwrap();
    assert_eq!(r.status, 200, "after clear: {}", r.text);
    assert_eq!(injected(&c, 1, "error_429"), before, "nothing injected after clear");

    // 503 before serving: the create did not happen.
    chaos(&c, &n1, &["set", "--error-rate", "1", "--error-code", "503"]).unwrap();
    let r = http.post(&list, &configmap("default", "not-served", json!({}))).unwrap();
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(status_reason(&r.body, 503), "ServiceUnavailable");
    assert_eq!(http.get(&format!("{n2}{CM_PATH}/not-served")).unwrap().status, 404);

    // 503 after serving: the client sees only the error, but the create happened.
    chaos(&c, &n1, &["set", "--error-rate", "1", "--error-code", "503", "--error-after-serving"]).unwrap();
    let r = http.post(&list, &configmap("default", "served", json!({"k": "v"}))).unwrap();
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(status_reason(&r.body, 503), "ServiceUnavailable");
    let got = eventually(Duration::from_secs(10), "node 2 serves the created object", || {
        let r = http.get(&format!("{n2}{CM_PATH}/served"))?;
        Ok((r.status == 200).then_some(r.body))
    })
    .unwrap();
    assert_eq!(got["data"]["k"], "v");
    // Retrying the "failed" create finds it done.
    chaos(&c, &n1, &["clear"]).unwrap();
    let r = http.post(&list, &configmap("default", "served", json!({"k": "v"}))).unwrap();
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(injected(&c, 1, "error_503") >= 2);
    assert_eq!(injected(&c, 1, "error_500"), 0);
}

#[test]
fn watch_strikes_expire_with_a_410_or_cut_the_stream() {
    let Some(c) = start_chaos(1) else { return };
    let http = c.http();
    let base = c.url(1);
    let r = http.post(&format!("{base}{CM_PATH}"), &configmap("default", "before", json!({}))).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let watch_url = format!("{base}{CM_PATH}?watch=1&resourceVersion=0");

    // Expire: an ERROR event with a 410 Expired Status, then a clean end.
    let w = WatchStream::open(&watch_url);
    match w.next(Duration::from_secs(10), "the ADDED event of the existing object") {
        Seen::Event(e) => {
            assert_eq!(e["type"], "ADDED", "{e}");
            assert_eq!(e["object"]["metadata"]["name"], "before", "{e}");
        }
        other => panic!("watch ended before its first event: {other:?}"),
    }
    let open = strike(&c, 1, "expire");
    assert!(open >= 1, "the node counted {open} open watches");
    let (events, end) = w.until_end(Duration::from_secs(10));
    assert_eq!(events.len(), 1, "only the ERROR event after the strike: {events:?}");
    let e = &events[0];
    assert_eq!(e["type"], "ERROR", "{e}");
    assert_eq!(status_reason(&e["object"], 410), "Expired");
    assert!(matches!(end, Seen::End), "the stream ends cleanly after the 410: {end:?}");
    assert_eq!(injected(&c, 1, "watch_expired"), open);
    assert_eq!(injected(&c, 1, "watch_closed"), 0);

    // Close: the stream is cut, without a final event.
    let w = WatchStream::open(&watch_url);
    assert!(matches!(w.next(Duration::from_secs(10), "the ADDED event"), Seen::Event(_)));
    let open = strike(&c, 1, "close");
    assert!(open >= 1, "the node counted {open} open watches");
    let (events, end) = w.until_end(Duration::from_secs(10));
    assert!(events.is_empty(), "no event after a close strike: {events:?}");
    match end {
        Seen::Broken(why) => eprintln!("the cut watch's read failed: {why}"),
        other => panic!("the stream is cut, not ended cleanly: {other:?}"),
    }
    assert_eq!(injected(&c, 1, "watch_closed"), open);

    // A strike is once: a watch opened afterwards is not hit and sees new writes.
    let w = WatchStream::open(&format!("{watch_url}&fieldSelector=metadata.name%3Dafter"));
    let r = http.post(&format!("{base}{CM_PATH}"), &configmap("default", "after", json!({}))).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    match w.next(Duration::from_secs(10), "the ADDED event of the new object") {
        Seen::Event(e) => {
            assert_eq!(e["type"], "ADDED", "{e}");
            assert_eq!(e["object"]["metadata"]["name"], "after", "{e}");
        }
        other => panic!("a watch opened after the strikes ended: {other:?}"),
    }
    // An out-of-range fraction is refused.
    let bad =
        http.post(&format!("{base}/kuorum/v1/chaos/watches"), &json!({"action": "Close", "fraction": 1.5})).unwrap();
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert_eq!(bad.reason(), Some("Invalid"));
}

#[test]
fn a_paused_apply_leaves_one_node_stale_until_cleared_and_bad_settings_are_refused() {
    let Some(mut c) = start_chaos(3) else { return };
    let leader = c.leader().unwrap();
    let followers = c.followers().unwrap();
    // Pause a follower: the writes the leader leads do not wait for it.
    let (paused, fresh) = (followers[0], followers[1]);
    let http = c.http();
    let out = chaos(&c, &c.url(paused), &["set", "--pause-apply"]).unwrap();
    assert!(out.contains("\"applyPaused\":true"), "{out}");
    assert!(injected(&c, paused, "apply_paused") >= 1);

    let r = http.post(&format!("{}{CM_PATH}", c.url(leader)), &configmap("default", "late", json!({}))).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let any_read = |id: u64| http.get(&format!("{}{CM_PATH}/late?resourceVersion=0", c.url(id))).unwrap();
    eventually(Duration::from_secs(10), "the unpaused follower serves the object", || {
        Ok((any_read(fresh).status == 200).then_some(()))
    })
    .unwrap();
    // Well after the other follower has it, the paused one still answers from its stale cache.
    thread::sleep(Duration::from_millis(500));
    let r = any_read(paused);
    assert_eq!(r.status, 404, "the paused node's Any read: {}", r.text);
    // Its consistent read never answers stale: it waits (and times out, or gets 504).
    let impatient = Http::with_timeout(Duration::from_secs(2));
    match impatient.get(&format!("{}{CM_PATH}/late", c.url(paused))) {
        Err(e) => eprintln!("the paused node's consistent read: {e:#}"),
        Ok(r) => {
            assert!(r.status == 504 || r.status == 200, "a consistent read on the paused node: {} {}", r.status, r.text)
        }
    }

    chaos(&c, &c.url(paused), &["clear"]).unwrap();
    let t0 = Instant::now();
    eventually(Duration::from_secs(10), "the paused node catches up after clear", || {
        Ok((any_read(paused).status == 200).then_some(()))
    })
    .unwrap();
    eprintln!("the paused node served the object {:?} after clear", t0.elapsed());
    let shown = chaos(&c, &c.url(paused), &["show"]).unwrap();
    assert!(shown.contains("\"applyPaused\":false"), "{shown}");

    // Settings that make no sense: 422 Invalid, and the standing settings are unchanged.
    let n1 = c.url(1);
    chaos(&c, &n1, &["set", "--latency-ms", "5"]).unwrap();
    let err = format!("{:#}", chaos(&c, &n1, &["set", "--error-rate", "2"]).unwrap_err());
    assert!(err.contains("422") && err.contains("errorRate"), "{err}");
    let err = format!("{:#}", chaos(&c, &n1, &["set", "--error-rate", "0.5", "--error-code", "418"]).unwrap_err());
    assert!(err.contains("422") && err.contains("errorCode"), "{err}");
    let settings = format!("{n1}/kuorum/v1/chaos");
    for bad in [
        json!({"errorRate": 2}),
        json!({"latencyRate": -0.5}),
        json!({"errorCode": 200}),
        json!({"latencyMs": 600_001}),
    ] {
        let r = http.put(&settings, &bad).unwrap();
        assert_eq!(r.status, 422, "PUT {bad}: {}", r.text);
        assert_eq!(r.reason(), Some("Invalid"), "PUT {bad}: {}", r.text);
    }
    let r = http.put(&settings, &json!({"errorRat": 1})).unwrap();
    assert_eq!(r.status, 400, "an unknown field: {}", r.text);
    let r = http.get(&settings).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body["latencyMs"], 5, "refused settings replaced the standing ones: {}", r.text);
    assert_eq!(r.body["errorRate"], 0.0, "{}", r.text);
    assert_eq!(http.get(&format!("{n1}{CM_PATH}")).unwrap().status, 200);
}

#[test]
fn latency_delays_api_requests_on_its_node() {
    let Some(c) = start_chaos(1) else { return };
    let http = c.http();
    let list = format!("{}{CM_PATH}", c.url(1));
    chaos(&c, &c.url(1), &["set", "--latency-ms", "300"]).unwrap();
    for _ in 0..3 {
        let t0 = Instant::now();
        let r = http.get(&list).unwrap();
        let took = t0.elapsed();
        assert_eq!(r.status, 200, "a delayed request is still served: {}", r.text);
        assert!(took >= Duration::from_millis(300), "GET took {took:?} with 300 ms of injected latency");
    }
    assert!(injected(&c, 1, "latency") >= 3);
    // --latency-rate 0: no request is delayed, nothing counted.
    chaos(&c, &c.url(1), &["set", "--latency-ms", "300", "--latency-rate", "0"]).unwrap();
    let before = injected(&c, 1, "latency");
    assert_eq!(http.get(&list).unwrap().status, 200);
    assert_eq!(injected(&c, 1, "latency"), before);
}

#[test]
fn compact_makes_watches_from_before_it_expire_on_every_node() {
    let Some(c) = start_chaos(3) else { return };
    let http = c.http();
    let r = http.post(&format!("{}{CM_PATH}", c.url(1)), &configmap("default", "before", json!({"k": "v"}))).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let old_rv: u64 = r.rv().unwrap().parse().unwrap();
    let r = http.post(&format!("{}{CM_PATH}", c.url(1)), &configmap("default", "after", json!({"k": "v"}))).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    // Before the compaction, a watch from the old resourceVersion replays what came after.
    let w = WatchStream::open(&format!("{}{CM_PATH}?watch=1&resourceVersion={old_rv}", c.url(2)));
    match w.next(Duration::from_secs(5), "the create after old_rv") {
        Seen::Event(e) => assert_eq!(e["object"]["metadata"]["name"], "after", "{e}"),
        other => panic!("expected an event, got {other:?}"),
    }
    let out = chaos(&c, &c.url(1), &["compact"]).unwrap();
    assert!(out.contains("compactedTo"), "{out}");
    assert_eq!(injected(&c, 1, "compaction"), 1);
    // Replicated: every node now answers a watch from before with 410 Expired.
    for id in 1..=3 {
        eventually(Duration::from_secs(10), &format!("node {id} expires a watch from before the compaction"), || {
            let w = WatchStream::open(&format!("{}{CM_PATH}?watch=1&resourceVersion={old_rv}", c.url(id)));
            match w.next(Duration::from_secs(5), "the 410") {
                Seen::Event(e) if e["type"] == "ERROR" => {
                    assert_eq!(status_reason(&e["object"], 410), "Expired", "{e}");
                    Ok(Some(()))
                }
                _ => Ok(None),
            }
        })
        .unwrap();
    }
}
