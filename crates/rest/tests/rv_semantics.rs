//! The spec's "Semantics for get and list" tables, cell by cell, and chunked lists
//! ("Retrieving large results sets in chunks"), over a real single-node cluster with its
//! watch cache: which snapshot each combination of resourceVersion, resourceVersionMatch,
//! limit and continue is served from, and every 400, 410, 422 and 504 cell.

mod common;

use axum::http::StatusCode;
use base64::Engine;
use common::{app, rv, App};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().unwrap().into()).collect()
}

/// The `data.k` of the item named `name`.
fn data_of<'a>(list: &'a Value, name: &str) -> &'a Value {
    let item = list["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == name);
    &item.unwrap_or_else(|| panic!("{name} not in {list}"))["data"]["k"]
}

async fn put_data(app: &App, name: &str, value: &str) -> Value {
    let url = format!("{CMS}/{name}");
    let mut obj = app.get(&url).await.json();
    obj["data"]["k"] = json!(value);
    let r = app.put(&url, obj).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

/// A namespace with configmaps a and b, then a modified: answers (old, now), where `old`
/// is the rv at which a still had `data.k = "v"` and `now` the rv after `a` became "new".
async fn two_versions(app: &App) -> (u64, u64) {
    app.namespace("default").await;
    app.configmap("default", "a").await;
    let b = app.configmap("default", "b").await;
    let old = rv(&b);
    let a = put_data(app, "a", "new").await;
    (old, rv(&a))
}

/// Decodes kube's unpadded URL-safe base64 (test-side, independent of the server's).
fn unbase64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not URL-safe base64: {s}"),
    };
    let (mut acc, mut bits, mut out) = (0u32, 0, Vec::new());
    for c in s.bytes() {
        acc = (acc << 6) | u32::from(val(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn token_json(token: &str) -> Value {
    serde_json::from_slice(&unbase64(token)).expect("a continue token is base64 JSON")
}

// ---- get ------------------------------------------------------------------------------

#[tokio::test]
async fn the_get_table() {
    let app = app().await;
    let (old, now) = two_versions(&app).await;
    let url = format!("{CMS}/a");
    // unset: most recent; "0": any; N: not older than N (so the current version).
    for q in [
        "",
        "?resourceVersion=",
        "?resourceVersion=0",
        &format!("?resourceVersion={old}"),
        &format!("?resourceVersion={now}"),
    ] {
        let r = app.get(&format!("{url}{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}");
        let v = r.json();
        assert_eq!((rv(&v), &v["data"]["k"]), (now, &json!("new")), "{q}");
        assert_eq!((v["kind"].as_str(), v["apiVersion"].as_str()), (Some("ConfigMap"), Some("v1")));
    }
    // GET has no resourceVersionMatch: it is ignored.
    let r = app.get(&format!("{url}?resourceVersion={old}&resourceVersionMatch=Exact")).await;
    assert_eq!(rv(&r.json()), now);
    // Not older than a version this node has not reached: 504 after the wait.
    let far = now + 1000;
    let r = app.get(&format!("{url}?resourceVersion={far}")).await;
    let current = app.applied();
    let v = r.status_of(504, "Timeout", &format!("Timeout: Too large resource version: {far}, current: {current}"));
    assert_eq!(r.headers.get("retry-after").unwrap(), "1");
    assert_eq!(v["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    app.get(&format!("{url}?resourceVersion=x")).await.status_of(400, "BadRequest", "invalid resource version: \"x\"");
    // Deleted objects are gone from the cache at once.
    assert_eq!(app.delete(&url).await.status, StatusCode::OK);
    app.get(&url).await.status_of(404, "NotFound", "configmaps \"a\" not found");
    app.get(&format!("{url}?resourceVersion=0")).await.status_of(404, "NotFound", "configmaps \"a\" not found");
}

// ---- list -----------------------------------------------------------------------------

/// What a cell of the list table should serve.
#[derive(Debug, Clone, Copy)]
enum Cell {
    /// The current state (most recent, any, or not older than: all the newest here).
    Current,
    /// Exactly the snapshot at the old rv.
    ExactOld,
    /// A continue token's page (the rest of the snapshot the token was cut from).
    Continue,
    Invalid400(&'static str),
    Invalid422(&'static str),
}

#[tokio::test]
async fn the_list_table_cell_by_cell() {
    let app = app().await;
    let (old, now) = two_versions(&app).await;
    // A token for the page after `a`, cut at the old snapshot.
    let first = app.get(&format!("{CMS}?limit=1&resourceVersion={old}&resourceVersionMatch=Exact")).await.json();
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_string();
    assert_eq!((names(&first), rv(&first)), (vec!["a".to_string()], old));

    use Cell::*;
    const UNLESS: &str =
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided";
    const EXACT0: &str =
        "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
    const NOT_WITH_CONTINUE: &str = "specifying resource version is not allowed when using continue";
    let n = format!("resourceVersion={old}");
    let rows: Vec<(&str, String, [Cell; 3])> = vec![
        ("", String::new(), [Current, Current, Current]),
        ("", "limit=5".into(), [Current, Current, ExactOld]),
        ("", format!("limit=5&continue={token}"), [Continue, Continue, Invalid400(NOT_WITH_CONTINUE)]),
        ("resourceVersionMatch=Exact", String::new(), [Invalid422(UNLESS), Invalid422(EXACT0), ExactOld]),
        ("resourceVersionMatch=Exact", "limit=5".into(), [Invalid422(UNLESS), Invalid422(EXACT0), ExactOld]),
        ("resourceVersionMatch=NotOlderThan", String::new(), [Invalid422(UNLESS), Current, Current]),
        ("resourceVersionMatch=NotOlderThan", "limit=5".into(), [Invalid422(UNLESS), Current, Current]),
    ];
    for (m, paging, cells) in rows {
        for (col, cell) in [String::new(), "resourceVersion=0".to_string(), n.clone()].iter().zip(cells) {
            let q: Vec<&str> = [m, paging.as_str(), col.as_str()].into_iter().filter(|s| !s.is_empty()).collect();
            let url = format!("{CMS}?{}", q.join("&"));
            let r = app.get(&url).await;
            match cell {
                Current => {
                    assert_eq!(r.status, StatusCode::OK, "{url}");
                    let v = r.json();
                    assert!(rv(&v) >= now, "{url}: {v}");
                    assert_eq!(names(&v), ["a", "b"], "{url}");
                    assert_eq!(data_of(&v, "a"), "new", "{url}");
                }
                ExactOld => {
                    assert_eq!(r.status, StatusCode::OK, "{url}");
                    let v = r.json();
                    assert_eq!(rv(&v), old, "{url}: exact means the list's resourceVersion is the one asked for");
                    assert_eq!(names(&v), ["a", "b"], "{url}");
                    assert_eq!(data_of(&v, "a"), "v", "{url}: a as it was at {old}");
                }
                Continue => {
                    assert_eq!(r.status, StatusCode::OK, "{url}");
                    let v = r.json();
                    assert_eq!((names(&v), rv(&v)), (vec!["b".to_string()], old), "{url}");
                    assert!(v["metadata"].get("continue").is_none(), "{url}: the last page has no token");
                }
                Invalid400(msg) => {
                    r.status_of(400, "BadRequest", msg);
                }
                Invalid422(msg) => {
                    let v = r.status_of(422, "Invalid", &format!("ListOptions.meta.k8s.io \"\" is invalid: {msg}"));
                    assert_eq!(v["details"]["kind"], "ListOptions", "{url}");
                    assert_eq!(v["details"]["group"], "meta.k8s.io", "{url}");
                }
            }
        }
    }
}

#[tokio::test]
async fn waits_timeouts_and_expiry_of_lists() {
    let app = app().await;
    let (old, now) = two_versions(&app).await;
    // 504 for a version this node does not reach, whether not-older-than or exact.
    let far = now + 1000;
    for q in [
        format!("resourceVersion={far}"),
        format!("resourceVersion={far}&resourceVersionMatch=NotOlderThan"),
        format!("resourceVersion={far}&resourceVersionMatch=Exact"),
        format!("resourceVersion={far}&limit=1"),
    ] {
        let r = app.get(&format!("{CMS}?{q}")).await;
        let current = app.applied();
        let v = r.status_of(504, "Timeout", &format!("Timeout: Too large resource version: {far}, current: {current}"));
        assert_eq!(r.headers.get("retry-after").unwrap(), "1", "{q}");
        assert_eq!(v["details"]["causes"][0]["reason"], "ResourceVersionTooLarge", "{q}");
    }
    // A version reached during the wait is served.
    let url = format!("{CMS}?resourceVersion={}&resourceVersionMatch=NotOlderThan", now + 1);
    let waiting = tokio::spawn({
        let router = app.router.clone();
        async move {
            use tower::ServiceExt;
            let req = axum::http::Request::get(url).body(axum::body::Body::empty()).unwrap();
            router.oneshot(req).await.unwrap().status()
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    app.configmap("default", "c").await;
    assert_eq!(waiting.await.unwrap(), StatusCode::OK);

    // Exact below the compacted version: 410 Expired; at or above it: served.
    let compact_at = now;
    app.compact(compact_at).await;
    let r = app.get(&format!("{CMS}?resourceVersion={old}&resourceVersionMatch=Exact")).await;
    r.status_of(410, "Expired", &format!("too old resource version: {old} ({compact_at})"));
    let r = app.get(&format!("{CMS}?resourceVersion={old}&limit=1")).await;
    r.status_of(410, "Expired", &format!("too old resource version: {old} ({compact_at})"));
    let v = app.get(&format!("{CMS}?resourceVersion={now}&resourceVersionMatch=Exact")).await.json();
    assert_eq!((rv(&v), names(&v)), (now, vec!["a".to_string(), "b".to_string()]));
    // Not-older-than an old version is still fine: the cache is newer.
    let v = app.get(&format!("{CMS}?resourceVersion={old}")).await.json();
    assert_eq!(names(&v), ["a", "b", "c"]);
}

// ---- chunking -------------------------------------------------------------------------

#[tokio::test]
async fn pages_come_from_one_snapshot_even_when_writes_happen_between_them() {
    let app = app().await;
    app.namespace("default").await;
    for name in ["c1", "c2", "c3", "c4", "c5", "c6", "c7"] {
        app.configmap("default", name).await;
    }
    let p1 = app.get(&format!("{CMS}?limit=3")).await.json();
    let at = rv(&p1);
    assert_eq!(names(&p1), ["c1", "c2", "c3"]);
    assert_eq!(p1["metadata"]["remainingItemCount"], 4);
    let t1 = p1["metadata"]["continue"].as_str().unwrap().to_string();
    assert_eq!(token_json(&t1), json!({"v": "meta.k8s.io/v1", "rv": at, "start": "c3\u{0}", "remaining": 4}));

    // Writes between pages: a new object, one deleted, one modified, all in later pages.
    app.configmap("default", "c45").await;
    assert_eq!(app.delete(&format!("{CMS}/c5")).await.status, StatusCode::OK);
    put_data(&app, "c6", "changed").await;
    assert!(app.applied() > at);

    let p2 = app.get(&format!("{CMS}?limit=3&continue={t1}")).await.json();
    assert_eq!(rv(&p2), at, "every page carries the first page's resourceVersion");
    assert_eq!(names(&p2), ["c4", "c5", "c6"], "the snapshot at {at}: no c45, c5 still there");
    assert_eq!(data_of(&p2, "c6"), "v", "c6 as it was at {at}");
    assert_eq!(p2["metadata"]["remainingItemCount"], 1);
    let t2 = p2["metadata"]["continue"].as_str().unwrap().to_string();
    let p3 = app.get(&format!("{CMS}?limit=3&continue={t2}")).await.json();
    assert_eq!((names(&p3), rv(&p3)), (vec!["c7".to_string()], at));
    assert!(p3["metadata"].get("continue").is_none());
    assert!(p3["metadata"].get("remainingItemCount").is_none());
    // Continue with resourceVersion=0 is the same as without.
    let again = app.get(&format!("{CMS}?limit=3&continue={t2}&resourceVersion=0")).await.json();
    assert_eq!(again, p3);

    // A fresh list sees the writes.
    let fresh = app.get(&format!("{CMS}?limit=100")).await.json();
    assert_eq!(names(&fresh), ["c1", "c2", "c3", "c4", "c45", "c6", "c7"]);
    assert!(fresh["metadata"].get("continue").is_none());
    assert!(fresh["metadata"].get("remainingItemCount").is_none());
}

/// The later pages of a paged list count nothing: the count comes from the token, less
/// the page's items. (Counting again read every object after the page, per page: 170 s
/// for a paged list of 300,000 objects, docs/benchmarks.md.) A token whose count is not
/// the truth shows it, from the cache and from the history alike.
#[tokio::test]
async fn later_pages_take_the_count_from_the_token() {
    let app = app().await;
    app.namespace("default").await;
    for name in ["c1", "c2", "c3", "c4", "c5", "c6"] {
        app.configmap("default", name).await;
    }
    let p1 = app.get(&format!("{CMS}?limit=2")).await.json();
    let at = rv(&p1);
    assert_eq!(p1["metadata"]["remainingItemCount"], 4);
    let forged = |remaining: u64| {
        let raw = json!({"v": "meta.k8s.io/v1", "rv": at, "start": "c2\u{0}", "remaining": remaining});
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&raw).unwrap())
    };
    // From the cache (nothing written since the first page).
    let p2 = app.get(&format!("{CMS}?limit=2&continue={}", forged(1000))).await.json();
    assert_eq!((names(&p2), rv(&p2)), (vec!["c3".to_string(), "c4".to_string()], at));
    assert_eq!(p2["metadata"]["remainingItemCount"], 998);
    assert_eq!(token_json(p2["metadata"]["continue"].as_str().unwrap())["remaining"], 998);
    // From the history (a write since).
    app.configmap("default", "c7").await;
    let p2 = app.get(&format!("{CMS}?limit=2&continue={}", forged(500))).await.json();
    assert_eq!((names(&p2), rv(&p2)), (vec!["c3".to_string(), "c4".to_string()], at));
    assert_eq!(p2["metadata"]["remainingItemCount"], 498);
    // The honest chain ends where the snapshot does, at 2 then none.
    let t = p1["metadata"]["continue"].as_str().unwrap();
    let p2 = app.get(&format!("{CMS}?limit=2&continue={t}")).await.json();
    assert_eq!(p2["metadata"]["remainingItemCount"], 2);
    let t = p2["metadata"]["continue"].as_str().unwrap();
    let p3 = app.get(&format!("{CMS}?limit=2&continue={t}")).await.json();
    assert_eq!(names(&p3), ["c5", "c6"]);
    assert!(p3["metadata"].get("continue").is_none() && p3["metadata"].get("remainingItemCount").is_none());
}

#[tokio::test]
async fn pages_without_writes_and_across_namespaces() {
    let app = app().await;
    for ns in ["a", "b"] {
        app.namespace(ns).await;
        for name in ["x", "y"] {
            app.configmap(ns, name).await;
        }
    }
    let mut got = Vec::new();
    let mut url = "/api/v1/configmaps?limit=3".to_string();
    let mut rvs = Vec::new();
    loop {
        let page = app.get(&url).await.json();
        rvs.push(rv(&page));
        for item in page["items"].as_array().unwrap() {
            got.push(format!(
                "{}/{}",
                item["metadata"]["namespace"].as_str().unwrap(),
                item["metadata"]["name"].as_str().unwrap()
            ));
        }
        match page["metadata"]["continue"].as_str() {
            Some(t) => {
                assert_eq!(token_json(t)["start"], json!(format!("{}\u{0}", got.last().unwrap())));
                url = format!("/api/v1/configmaps?limit=3&continue={t}");
            }
            None => break,
        }
    }
    assert_eq!(got, ["a/x", "a/y", "b/x", "b/y"]);
    assert_eq!(rvs.len(), 2);
    assert!(rvs.iter().all(|r| *r == rvs[0]));
    // A limit equal to the collection's size: no continue.
    let all = app.get("/api/v1/configmaps?limit=4").await.json();
    assert!(all["metadata"].get("continue").is_none(), "{all}");
    // Cluster-scoped collections page the same way.
    let nss = app.get("/api/v1/namespaces?limit=1").await.json();
    assert_eq!(names(&nss), ["a"]);
    let t = nss["metadata"]["continue"].as_str().unwrap();
    assert_eq!(token_json(t)["start"], "a\u{0}");
    let rest = app.get(&format!("/api/v1/namespaces?limit=1&continue={t}")).await.json();
    assert_eq!(names(&rest), ["b"]);
}

#[tokio::test]
async fn selectors_with_limit_fill_pages_and_omit_the_remaining_count() {
    let app = app().await;
    app.namespace("default").await;
    for (i, label) in ["web", "db", "db", "web", "db", "web", "web"].iter().enumerate() {
        let r = app.post(CMS, json!({"metadata": {"name": format!("c{i}"), "labels": {"app": label}}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    // From the cache.
    let p1 = app.get(&format!("{CMS}?limit=2&labelSelector=app%3Dweb")).await.json();
    assert_eq!(names(&p1), ["c0", "c3"]);
    assert!(p1["metadata"].get("remainingItemCount").is_none(), "unknown with selectors: {p1}");
    let t1 = p1["metadata"]["continue"].as_str().unwrap().to_string();
    // A write between pages sends the next page to the history, which must keep scanning
    // past non-matching objects until the page is full.
    app.configmap("default", "zz").await;
    let p2 = app.get(&format!("{CMS}?limit=2&labelSelector=app%3Dweb&continue={t1}")).await.json();
    assert_eq!((names(&p2), rv(&p2)), (vec!["c5".to_string(), "c6".to_string()], rv(&p1)));
    assert!(p2["metadata"].get("remainingItemCount").is_none());
    // Objects (not matching) follow c6 in the snapshot, so a token is given, as etcd-backed
    // kube-apiserver does; its page is empty.
    if let Some(t2) = p2["metadata"]["continue"].as_str() {
        let p3 = app.get(&format!("{CMS}?limit=2&labelSelector=app%3Dweb&continue={t2}")).await.json();
        assert_eq!(names(&p3), Vec::<String>::new());
        assert!(p3["metadata"].get("continue").is_none());
    }
    let f = app.get(&format!("{CMS}?limit=1&fieldSelector=metadata.name%3Dc4")).await.json();
    assert_eq!(names(&f), ["c4"]);
    assert!(f["metadata"].get("remainingItemCount").is_none());
}

#[tokio::test]
async fn continue_after_compaction_is_410_with_a_fresh_token() {
    let app = app().await;
    app.namespace("default").await;
    for name in ["c1", "c2", "c3", "c4"] {
        app.configmap("default", name).await;
    }
    let p1 = app.get(&format!("{CMS}?limit=2")).await.json();
    let t1 = p1["metadata"]["continue"].as_str().unwrap().to_string();
    app.configmap("default", "c5").await;
    let now = app.applied();
    app.compact(now).await;
    let r = app.get(&format!("{CMS}?limit=2&continue={t1}")).await;
    let v = r.status_of(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list \
         without the continue parameter, or use the continue token in this response to retrieve the remainder of the \
         results. Continuing with the provided token results in an inconsistent list - objects that were created, \
         modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    );
    let fresh = v["metadata"]["continue"].as_str().expect("a token in the Status's metadata.continue");
    assert_eq!(token_json(fresh), json!({"v": "meta.k8s.io/v1", "rv": -1, "start": "c2\u{0}"}));
    // The fresh token continues at the newest state: c5 shows up.
    let p2 = app.get(&format!("{CMS}?limit=2&continue={fresh}")).await.json();
    assert_eq!(names(&p2), ["c3", "c4"]);
    assert!(rv(&p2) >= now);
    let t2 = p2["metadata"]["continue"].as_str().unwrap();
    assert_eq!(token_json(t2)["rv"], rv(&p2), "later tokens carry the newest snapshot's rv");
    let p3 = app.get(&format!("{CMS}?limit=2&continue={t2}")).await.json();
    assert_eq!(names(&p3), ["c5"]);
}

#[tokio::test]
async fn bad_continue_parameters() {
    let app = app().await;
    app.namespace("default").await;
    app.configmap("default", "a").await;
    app.configmap("default", "b").await;
    let p1 = app.get(&format!("{CMS}?limit=1")).await.json();
    let t = p1["metadata"]["continue"].as_str().unwrap().to_string();
    app.get(&format!("{CMS}?limit=1&continue=%%%")).await.status_of(
        400,
        "BadRequest",
        "invalid continue token: continue key is not valid: illegal base64 data",
    );
    // A token escaping its collection is refused.
    let evil = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiIuLi9zZWNyZXRzIn0"; // start "../secrets"
    app.get(&format!("{CMS}?continue={evil}")).await.status_of(
        400,
        "BadRequest",
        "invalid continue token: continue key is not valid: ../secrets",
    );
    app.get(&format!("{CMS}?limit=1&continue={t}&resourceVersion=3")).await.status_of(
        400,
        "BadRequest",
        "specifying resource version is not allowed when using continue",
    );
    let r = app.get(&format!("{CMS}?limit=1&continue={t}&resourceVersion=0&resourceVersionMatch=NotOlderThan")).await;
    r.status_of(
        422,
        "Invalid",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden \
         when continue is provided",
    );
    app.get(&format!("{CMS}?limit=x")).await.status_of(
        400,
        "BadRequest",
        "invalid value for limit: \"x\": expected an integer",
    );
    app.get(&format!("{CMS}?sendInitialEvents=true")).await.status_of(
        422,
        "Invalid",
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
    );
    // Without limit, continue still pages from the token (and serves the rest).
    let rest = app.get(&format!("{CMS}?continue={t}")).await.json();
    assert_eq!(names(&rest), ["b"]);
}

#[tokio::test]
async fn list_items_are_the_stored_objects() {
    let app = app().await;
    app.namespace("default").await;
    let a = app.configmap("default", "a").await;
    let r = app.get(CMS).await;
    assert_eq!(r.content_type(), "application/json");
    let text = String::from_utf8(r.bytes.clone()).unwrap();
    assert!(text.starts_with(r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":""#), "{text}");
    assert!(!text.contains('\n'));
    assert_eq!(r.json()["items"], json!([a]));
    let one = app.get(&format!("{CMS}/a")).await;
    assert!(
        text.contains(std::str::from_utf8(&one.bytes).unwrap()),
        "the list embeds the object's bytes as served by GET"
    );
    // An empty collection.
    let empty = app.get("/api/v1/namespaces/default/secrets?limit=10").await.json();
    assert_eq!(empty["items"], json!([]));
    assert!(empty["metadata"].get("continue").is_none());
}

/// Every past snapshot in the window, paged with every limit and with and without a
/// selector, equals what a list showed at that moment (the page rebuilt from the event
/// window against the recorded truth), remainingItemCount included.
#[tokio::test]
async fn exact_pages_of_past_snapshots_match_what_was_listed_then() {
    let app = app().await;
    app.namespace("default").await;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    // (rv, [(name, object rv, label)]) after each write.
    type Listed = Vec<(String, u64, String)>;
    let mut truth: Vec<(u64, Listed)> = Vec::new();
    for _ in 0..40 {
        let name = format!("k{}", next(8));
        let label = if next(2) == 0 { "web" } else { "db" };
        let url = format!("{CMS}/{name}");
        let existing = app.get(&url).await;
        if existing.status == StatusCode::NOT_FOUND {
            let r = app.post(CMS, json!({"metadata": {"name": name, "labels": {"app": label}}})).await;
            assert_eq!(r.status, StatusCode::CREATED);
        } else if next(3) == 0 {
            assert_eq!(app.delete(&url).await.status, StatusCode::OK);
        } else {
            let mut obj = existing.json();
            obj["metadata"]["labels"] = json!({"app": label});
            assert_eq!(app.put(&url, obj).await.status, StatusCode::OK);
        }
        let now = app.get(&format!("{CMS}?resourceVersion=0")).await.json();
        let items = now["items"].as_array().unwrap();
        let state = items
            .iter()
            .map(|i| {
                let m = &i["metadata"];
                (m["name"].as_str().unwrap().to_string(), rv(i), m["labels"]["app"].as_str().unwrap().to_string())
            })
            .collect();
        truth.push((rv(&now), state));
    }
    assert_eq!(truth.last().unwrap().0, app.applied());
    for (at, state) in &truth {
        for selector in [None, Some("web")] {
            let want: Vec<(String, u64)> = state
                .iter()
                .filter(|(_, _, l)| selector.is_none_or(|s| s == l))
                .map(|(n, r, _)| (n.clone(), *r))
                .collect();
            let sel = selector.map(|s| format!("&labelSelector=app%3D{s}")).unwrap_or_default();
            // Without a limit, Exact.
            let whole = app.get(&format!("{CMS}?resourceVersion={at}&resourceVersionMatch=Exact{sel}")).await.json();
            let got: Vec<(String, u64)> = whole["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i["metadata"]["name"].as_str().unwrap().into(), rv(i)))
                .collect();
            assert_eq!((rv(&whole), &got), (*at, &want), "exact at {at} {sel}");
            // Paged, with a limit (the legacy "limit with RV = exact" row).
            for limit in [1, 2, 3, 5] {
                let mut got = Vec::new();
                let mut url = format!("{CMS}?resourceVersion={at}&limit={limit}{sel}");
                loop {
                    let page = app.get(&url).await.json();
                    assert_eq!(rv(&page), *at, "{url}");
                    let items = page["items"].as_array().unwrap();
                    assert!(items.len() <= limit, "{url}");
                    got.extend(items.iter().map(|i| (i["metadata"]["name"].as_str().unwrap().to_string(), rv(i))));
                    let Some(t) = page["metadata"]["continue"].as_str() else {
                        assert!(page["metadata"].get("remainingItemCount").is_none());
                        break;
                    };
                    assert_eq!(items.len(), limit, "only full pages have a token: {url}");
                    match selector {
                        None => assert_eq!(page["metadata"]["remainingItemCount"], want.len() - got.len(), "{url}"),
                        Some(_) => assert!(page["metadata"].get("remainingItemCount").is_none()),
                    }
                    url = format!("{CMS}?limit={limit}&continue={t}{sel}");
                }
                assert_eq!(got, want, "paged by {limit} at {at} {sel}");
            }
        }
    }
}
