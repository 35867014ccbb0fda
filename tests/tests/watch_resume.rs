//! A raw watch on the leader records events while a writer creates objects through a
//! follower; the leader is SIGKILLed mid-stream; the watch resumes on a survivor from the
//! last resourceVersion it saw (event or bookmark) while the writer keeps going through the
//! survivors. The events seen before and after, joined, must be exactly the acknowledged
//! writes: rvs strictly increasing, each acknowledged create once, nothing else.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::{configmap, eventually, rv_of, Cluster, Http};
use serde_json::{json, Value};

const NS: &str = "resume";
const PATH: &str = "/api/v1/namespaces/resume/configmaps";

/// What one watch stream delivered.
#[derive(Default)]
struct Stream {
    /// (type, name, rv) of every ADDED/MODIFIED/DELETED event, in order.
    events: Vec<(String, String, u64)>,
    bookmarks: usize,
    errors: Vec<String>,
    /// The last rv seen in an event or a bookmark.
    last_rv: Option<u64>,
    ended: Option<String>,
}

/// Watches `base` from `rv` on a thread until the stream ends, recording into the result.
fn watch_from(base: &str, rv: u64) -> (Arc<Mutex<Stream>>, thread::JoinHandle<()>) {
    let out: Arc<Mutex<Stream>> = Arc::default();
    let sink = out.clone();
    let url = format!("{base}{PATH}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=50");
    let h = thread::spawn(move || {
        // No overall timeout: the stream is bounded by timeoutSeconds (and the kill).
        let client =
            reqwest::blocking::Client::builder().timeout(None).connect_timeout(Duration::from_secs(2)).build().unwrap();
        let resp = match client.get(&url).send() {
            Ok(r) if r.status() == 200 => r,
            Ok(r) => {
                sink.lock().unwrap().ended = Some(format!("HTTP {}", r.status()));
                return;
            }
            Err(e) => {
                sink.lock().unwrap().ended = Some(format!("connect: {e}"));
                return;
            }
        };
        for line in BufReader::new(resp).lines() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    sink.lock().unwrap().ended = Some(format!("read: {e}"));
                    return;
                }
            };
            let ev: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                Err(e) => {
                    sink.lock().unwrap().errors.push(format!("not JSON ({e}): {line}"));
                    continue;
                }
            };
            let ty = ev["type"].as_str().unwrap_or_default().to_string();
            let mut s = sink.lock().unwrap();
            match ty.as_str() {
                "ERROR" => s.errors.push(line.clone()),
                _ => match rv_of(&ev["object"]) {
                    Ok(rv) => {
                        if ty == "BOOKMARK" {
                            s.bookmarks += 1;
                        } else {
                            let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
                            s.events.push((ty.clone(), name, rv));
                        }
                        s.last_rv = Some(rv);
                    }
                    Err(e) => s.errors.push(format!("{e:#}")),
                },
            }
        }
        sink.lock().unwrap().ended = Some("eof".into());
    });
    (out, h)
}

/// One create, retried with the same name until its outcome is known; returns its rv.
/// After an unknown outcome (timeout, 5xx, node gone) a retry may find it already created:
/// then a GET says which rv it got. Returns `None` only when told to stop.
fn create_until_known(
    http: &Http,
    urls: &[String],
    start: usize,
    name: &str,
    stop: &AtomicBool,
) -> Option<(u64, String)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = start;
    while Instant::now() < deadline {
        let base = &urls[i % urls.len()];
        i += 1;
        match http.post(&format!("{base}{PATH}"), &configmap(NS, name, json!({"n": name}))) {
            Ok(r) if r.status == 201 => return Some((rv_of(&r.body).unwrap(), base.clone())),
            Ok(r) if r.reason() == Some("AlreadyExists") => {
                if let Ok(g) = http.get(&format!("{base}{PATH}/{name}")) {
                    if g.status == 200 {
                        return Some((rv_of(&g.body).unwrap(), format!("{base} (found after retry)")));
                    }
                }
            }
            _ => {}
        }
        if stop.load(Ordering::Relaxed) && i > start + 200 {
            return None;
        }
        thread::sleep(Duration::from_millis(50));
    }
    panic!("create {name}: outcome still unknown after 30 s");
}

#[test]
fn watch_resumes_on_a_survivor_after_the_leader_is_killed() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let leader = c.leader().unwrap();
    let followers = c.followers().unwrap();
    c.create_namespace(followers[0], NS).unwrap();
    let start_rv = rv_of(&c.http().get(&format!("{}{PATH}", c.url(leader))).unwrap().body).unwrap();
    eprintln!("leader {leader}, followers {followers:?}; watching the leader from rv {start_rv}");

    let (before, before_h) = watch_from(&c.url(leader), start_rv);

    // The writer: sequential creates through the followers (in turn), never through the
    // node that will be killed.
    let writer_urls: Vec<String> = followers.iter().map(|&id| c.url(id)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(String, u64, Instant)>>> = Arc::default();
    let writer = {
        let (stop, acked, urls) = (stop.clone(), acked.clone(), writer_urls.clone());
        thread::spawn(move || {
            let http = Http::with_timeout(Duration::from_secs(3));
            for n in 0..100_000usize {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let name = format!("w-{n:05}");
                match create_until_known(&http, &urls, n, &name, &stop) {
                    Some((rv, _)) => acked.lock().unwrap().push((name, rv, Instant::now())),
                    None => return,
                }
                thread::sleep(Duration::from_millis(10));
            }
        })
    };

    // Let the watch see some writes, then kill the leader mid-stream.
    eventually(Duration::from_secs(20), "the watch on the leader sees 30 events", || {
        Ok((before.lock().unwrap().events.len() >= 30).then_some(()))
    })
    .unwrap();
    let kill_at = Instant::now();
    c.kill(leader);
    before_h.join().unwrap();
    let (before_events, resume_rv, ended) = {
        let s = before.lock().unwrap();
        assert!(s.errors.is_empty(), "errors on the leader's stream: {:?}", s.errors);
        (s.events.clone(), s.last_rv.expect("an rv seen before the kill"), s.ended.clone())
    };
    eprintln!(
        "killed leader {leader}: its stream ended ({ended:?}) after {} events (last rv {resume_rv})",
        before_events.len()
    );

    // Resume on a survivor from the last rv seen.
    let survivor = followers[1];
    let (after, after_h) = watch_from(&c.url(survivor), resume_rv);

    // Writes must go on through the survivors: 30 more acknowledged after the kill.
    let more = eventually(Duration::from_secs(30), "30 writes acknowledged after the kill", || {
        let a = acked.lock().unwrap();
        Ok((a.iter().filter(|x| x.2 > kill_at).count() >= 30).then_some(()))
    });
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    more.unwrap();
    let acked: Vec<(String, u64)> = acked.lock().unwrap().iter().map(|(n, rv, _)| (n.clone(), *rv)).collect();
    let max_rv = acked.iter().map(|a| a.1).max().unwrap();

    // The resumed watch catches up to the last acknowledged write.
    eventually(Duration::from_secs(20), "the resumed watch reaches the last acknowledged rv", || {
        let s = after.lock().unwrap();
        if let Some(e) = &s.ended {
            anyhow::bail!("resumed stream ended: {e}; errors {:?}", s.errors);
        }
        Ok((s.last_rv.unwrap_or(0) >= max_rv).then_some(()))
    })
    .unwrap();
    // A little longer: anything extra (a duplicate, a phantom write) would arrive now.
    thread::sleep(Duration::from_millis(500));
    let (after_events, after_errors, bookmarks) = {
        let s = after.lock().unwrap();
        (s.events.clone(), s.errors.clone(), s.bookmarks + before.lock().unwrap().bookmarks)
    };
    assert!(after_errors.is_empty(), "errors on the resumed stream: {after_errors:?}");
    // End the resumed stream: the survivor stays up, so stop the thread by letting it go
    // (its connection closes when the cluster is dropped, bounded by timeoutSeconds).
    drop(after_h);

    let union: Vec<(String, String, u64)> = before_events.iter().chain(after_events.iter()).cloned().collect();
    eprintln!(
        "{} acknowledged creates; watch saw {} before the kill + {} after ({} bookmarks)",
        acked.len(),
        before_events.len(),
        after_events.len(),
        bookmarks
    );
    assert!(!after_events.is_empty(), "nothing seen after resuming");
    for w in union.windows(2) {
        assert!(w[0].2 < w[1].2, "rvs not strictly increasing (duplicate or reorder): {:?} then {:?}", w[0], w[1]);
    }
    for e in &union {
        assert_eq!(e.0, "ADDED", "only creates were made: {e:?}");
    }
    let seen: Vec<(String, u64)> = union.iter().map(|(_, n, rv)| (n.clone(), *rv)).collect();
    let mut want = acked.clone();
    want.sort_by_key(|a| a.1);
    if seen != want {
        let seen_m: BTreeMap<_, _> = seen.iter().cloned().collect();
        let want_m: BTreeMap<_, _> = want.iter().cloned().collect();
        let missing: Vec<_> = want.iter().filter(|(n, rv)| seen_m.get(n) != Some(rv)).collect();
        let extra: Vec<_> = seen.iter().filter(|(n, rv)| want_m.get(n) != Some(rv)).collect();
        panic!(
            "watch union != acknowledged writes: {} missing {:?}, {} extra {:?} (resumed from rv {resume_rv})",
            missing.len(),
            &missing[..missing.len().min(10)],
            extra.len(),
            &extra[..extra.len().min(10)]
        );
    }
    c.check_alive().unwrap();
}
