//! What watches with initial events cost a node, counted by a global allocator that
//! keeps the bytes live at any moment (not by timing), over a real one-node cluster with
//! a namespace of about 4 MB:
//!
//! - many watches (RV unset, "0", sendInitialEvents) hold no copy of the namespace: a
//!   started watch holds nothing of its initial events, one that was read once holds
//!   one chunk (64 KiB and at most one object more);
//! - clients on real TCP connections that never read cost the node at most hyper's
//!   write buffer and one chunk each;
//! - a watcher that never reads while changes keep coming is cut off: its stream ends
//!   after its initial events, and a watch from the last resourceVersion it read misses
//!   nothing.
//!
//! The tests of this file run one at a time (the allocator's count is process-wide).

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{app, app_with, rv, summary, App, Next};
use http_body_util::BodyExt;
use kuorum_test_alloc::{alone, live, Counting};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tower::ServiceExt;

#[global_allocator]
static ALLOC: Counting = Counting;

const CMS: &str = "/api/v1/namespaces/big/configmaps";
const OBJECTS: usize = 1000;
/// About 4 KB per object: the namespace is about 4 MB.
const DATA: usize = 4000;
const MB: isize = 1 << 20;

/// Creates the namespace "big" with `OBJECTS` ConfigMaps of about 4 KB; answers the
/// cache's encoded bytes of them.
async fn big_namespace(app: &App) -> usize {
    app.namespace("big").await;
    let before = app.state.cache.size().object_bytes;
    for i in 0..OBJECTS {
        let r = app.post(CMS, json!({"metadata": {"name": format!("o{i:05}")}, "data": {"k": "x".repeat(DATA)}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let bytes = app.state.cache.size().object_bytes - before;
    assert!(bytes > 4_000_000, "{bytes}");
    bytes
}

async fn start(app: &App, uri: &str) -> Body {
    let req = Request::builder().method(Method::GET).uri(uri).body(Body::empty()).unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp.into_body()
}

const INITIAL: [&str; 3] = [
    "watch=1",
    "watch=1&resourceVersion=0",
    "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
];

/// Lists and watches with selectors over a large namespace keep, of each object they
/// looked at, its labels and the fields they read, not its parsed JSON: they once kept
/// that for as long as the object lived, several times the namespace's bytes after one
/// LIST with a label selector.
#[tokio::test]
async fn selectors_keep_no_parsed_copy_of_the_namespace() {
    let _one = alone();
    let app = app().await;
    let namespace = big_namespace(&app).await as isize;
    let before = live();
    for query in [
        "labelSelector=app%3Dweb",
        "fieldSelector=metadata.name%3Do00007",
        "labelSelector=!missing&fieldSelector=metadata.namespace%3Dbig&limit=10",
    ] {
        let r = app.get(&format!("{CMS}?{query}")).await;
        assert_eq!(r.status, StatusCode::OK, "{query}");
        if query.starts_with("field") {
            assert_eq!(r.json()["items"].as_array().map(Vec::len), Some(1));
        }
    }
    let mut w = app.watch(&format!("{CMS}?watch=1&labelSelector=app%3Dweb&resourceVersion=0")).await;
    w.silent_for(Duration::from_millis(100)).await;
    drop(w);
    let kept = live() - before;
    eprintln!("selector lists and a watch over {namespace} bytes: {kept} bytes kept");
    assert!(kept < namespace / 10, "{kept} bytes kept after selector lists over a namespace of {namespace}");
}

#[tokio::test]
async fn a_hundred_watches_with_initial_events_hold_no_copy_of_the_namespace() {
    let _one = alone();
    let app = app().await;
    let namespace = big_namespace(&app).await as isize;
    const WATCHES: isize = 100;
    let mut bodies = Vec::with_capacity(WATCHES as usize);
    let before = live();
    for i in 0..WATCHES {
        bodies.push(start(&app, &format!("{CMS}?{}", INITIAL[i as usize % 3])).await);
    }
    let started = live() - before;
    eprintln!("100 started watches with initial events over {namespace} bytes: {started} bytes");
    assert!(started < WATCHES * 16 * 1024, "100 started watches hold {started} bytes (the namespace: {namespace})");
    assert_eq!(app.state.cache.watchers_size().snapshots, 1, "one snapshot of the namespace between them");

    // Each client reads one chunk and stops: each stream then holds at most one chunk.
    let mut first = Vec::new();
    for body in &mut bodies {
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        first.push(frame);
    }
    assert!(first.iter().all(|f| f.len() >= 64 * 1024 && f.len() < 64 * 1024 + 2 * DATA));
    let read_once = live() - before;
    eprintln!("... each read once: {read_once} bytes");
    assert!(
        read_once < WATCHES * (64 * 1024 + 2 * DATA as isize + 16 * 1024),
        "100 watches read once hold {read_once} bytes; copies of the namespace would be {}",
        WATCHES * namespace
    );
    // The last watch's first chunk counts toward its lines.
    let mut lines = first.last().unwrap().iter().filter(|b| **b == b'\n').count();
    drop(first);

    // Read to the end of the initial events (the last watch has no end bookmark): a
    // stream still holds one chunk at most.
    let mut body = bodies.pop().unwrap();
    let mut peak = 0;
    while lines < OBJECTS {
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        lines += frame.iter().filter(|b| **b == b'\n').count();
        peak = peak.max(live() - before);
    }
    eprintln!("... one read through: peak {peak} bytes");
    assert!(peak < read_once + 2 * MB, "reading one stream through peaked at {peak} bytes");
    drop((bodies, body));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.state.cache.watchers_size().watchers, 0);
    assert_eq!(app.state.cache.watchers_size().snapshots, 0, "the snapshot goes with its last reader");
}

#[tokio::test]
async fn a_watcher_that_never_reads_is_cut_off_and_its_client_resumes_without_a_gap() {
    let _one = alone();
    let app = app_with(kuorum_watch::CacheConfig { watcher_queue: 16, ..Default::default() }).await;
    big_namespace(&app).await;
    let mut w = app.watch(&format!("{CMS}?watch=1&resourceVersion=0")).await;
    assert_eq!(app.state.cache.watcher_count(), 1);
    // Changes keep coming; the client reads nothing.
    let mut created = Vec::new();
    for i in 0..20 {
        let half = if i < 10 { "a" } else { "b" };
        let obj = json!({"metadata": {"name": format!("n{i:02}"), "labels": {"half": half}}});
        created.push(rv(&app.post(CMS, obj).await.json()));
    }
    assert_eq!(app.state.cache.watcher_count(), 0, "cut off when its queue of 16 was full");
    assert_eq!(app.state.cache.watchers_size().queued, 0, "its queue was freed");
    // It still gets its initial state, then its stream ends (kube-apiserver closes such
    // a watch too); client-go resumes from the last resourceVersion it read.
    let mut last = 0;
    let mut added = 0;
    loop {
        match w.next_within(Duration::from_secs(10)).await {
            Next::Line(v) => {
                let (t, _, rv) = summary(&v);
                assert_eq!(t, "ADDED");
                added += 1;
                last = last.max(rv);
            }
            Next::End => break,
            Next::Silent => panic!("a cut-off watch must end"),
        }
    }
    assert_eq!(added, OBJECTS, "its initial state, and none of the events it could not take");
    // (In two halves: a replay of 20 events would not fit this test's queue of 16.)
    let mut got = Vec::new();
    for half in ["a", "b"] {
        let mut resumed = app.watch(&format!("{CMS}?watch=1&resourceVersion={last}&labelSelector=half%3D{half}")).await;
        got.extend(resumed.events(10).await.into_iter().map(|e| e.2));
    }
    assert_eq!(got, created, "every change after the last one read, once");
}

/// Real TCP: clients send a watch with initial events and never read. Hyper writes into
/// the socket until the kernel's buffers are full; the stream hands it the next chunk
/// only once the last was written, so hyper's write buffer (400 KiB by default, and
/// `max_buf_size` where the node sets it) holds one chunk at most. So each costs the
/// node's heap under 256 KiB, where a stream built up front held the whole namespace
/// and one without the hand-over check filled hyper's buffer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_cost_at_most_a_buffer_each() {
    let _one = alone();
    let app = app().await;
    let namespace = big_namespace(&app).await as isize;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app.router.clone();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    const CLIENTS: isize = 40;
    let before = live();
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {CMS}?{} HTTP/1.1\r\nHost: x\r\n\r\n", INITIAL[i as usize % 3]);
        s.write_all(req.as_bytes()).await.unwrap();
        clients.push(s);
    }
    // Wait until the node stops growing (every connection's buffers full).
    let mut last = live();
    let mut peak = 0;
    let mut still = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = live();
        peak = peak.max(now - before);
        still = if (now - last).abs() < 64 * 1024 { still + 1 } else { 0 };
        last = now;
        if still >= 5 && app.state.cache.watcher_count() == CLIENTS as usize {
            break;
        }
    }
    assert_eq!(app.state.cache.watcher_count(), CLIENTS as usize);
    eprintln!("{CLIENTS} TCP clients that never read, namespace {namespace} bytes: peak {peak} bytes");
    assert!(
        peak < CLIENTS * 256 * 1024,
        "{CLIENTS} clients that never read grew the heap by {peak} bytes at the peak; the namespace is {namespace}"
    );
    drop(clients);
    for _ in 0..100 {
        if app.state.cache.watcher_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.state.cache.watcher_count(), 0, "a closed connection ends its watch");
    server.abort();
}

/// Objects of 16 KiB and more go out as the cache's own bytes (no watch copies them),
/// in lines that read as usual, and the initial-events-end bookmark follows the last.
#[tokio::test]
async fn large_initial_objects_are_sent_as_the_caches_bytes() {
    let _one = alone();
    let app = app().await;
    app.namespace("big").await;
    let mut names = Vec::new();
    for i in 0..12 {
        // Small and large ones interleaved: both paths, in key order.
        let size = if i % 3 == 0 { 100 } else { 100_000 };
        let name = format!("l{i:02}");
        let r = app.post(CMS, json!({"metadata": {"name": name}, "data": {"k": "y".repeat(size)}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
        names.push((name, rv(&r.json())));
    }
    let query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut w = app.watch(&format!("{CMS}?{query}")).await;
    for (name, rv) in &names {
        assert_eq!(summary(&w.next().await), ("ADDED".to_string(), name.clone(), *rv));
    }
    let end = w.next().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");

    // The frames of a large object's line: one of them is the cached bytes themselves.
    let (_, cached) = app.state.cache.get("/registry/core/configmaps/big/l01");
    let cached = cached.expect("in the cache");
    let mut body = start(&app, &format!("{CMS}?{query}")).await;
    let mut shared = false;
    let before = live();
    let mut peak = 0;
    for _ in 0..20 {
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        shared |= frame.as_ptr() == cached.bytes.as_ptr() && frame.len() == cached.bytes.len();
        peak = peak.max(live() - before);
    }
    assert!(shared, "the large object's bytes were not sent as the cache's own");
    assert!(peak < 64 * 1024, "a watch reading 100 KB objects allocated {peak} bytes at once");
}
