//! What watches cost the node beyond the cache's shared data, counted by a global
//! allocator that keeps the bytes live at any moment (not by timing): watches with
//! initial state share one snapshot of a collection of several MB; a watcher that never
//! reads holds at most its queue and is cut off, its queue freed; reading the initial
//! state lazily sees exactly the state at the watch's rv.
//!
//! The tests of this file run one at a time (the allocator's count is process-wide).

use std::sync::Arc;

use bytes::Bytes;
use kuorum_api::selector::LabelSelector;
use kuorum_store::apply::{Change, ChangeKind};
use kuorum_test_alloc::{alone, live, Counting};
use kuorum_watch::{CacheConfig, TryRecvError, WatchCache, WatchFilter, WatchStart, WatchersSize};

#[global_allocator]
static ALLOC: Counting = Counting;

const NS: &str = "/registry/core/configmaps/big/";
const OBJECTS: usize = 1500;
/// Bytes of data per object: 1,500 of them make a namespace of about 6 MB.
const DATA: usize = 4000;

fn object(name: &str, rv: u64, app: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"big","resourceVersion":"{rv}","labels":{{"app":"{app}"}}}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(DATA)
    ))
}

/// A cache at rv 10 holding `OBJECTS` objects of about 4 KB under `NS` (every tenth one
/// labelled app=rare) and one object elsewhere.
fn big_cache(config: CacheConfig) -> Arc<WatchCache> {
    let c = WatchCache::new(config);
    let mut objects: Vec<(String, Bytes)> = (0..OBJECTS)
        .map(|i| {
            let name = format!("o{i:05}");
            (format!("{NS}{name}"), object(&name, 10, if i % 10 == 0 { "rare" } else { "common" }))
        })
        .collect();
    objects.push(("/registry/core/configmaps/other/x".into(), object("x", 10, "common")));
    c.reset(10, 10, objects, vec![]);
    c
}

fn added(name: &str, rv: u64, ns: &str) -> Change {
    Change {
        key: format!("/registry/core/configmaps/{ns}/{name}"),
        rv,
        kind: ChangeKind::Added,
        object: object(name, rv, "common"),
        prev: None,
    }
}

#[test]
fn two_thousand_watches_with_initial_state_share_one_snapshot() {
    let _one = alone();
    let c = big_cache(CacheConfig::default());
    assert!(c.size().object_bytes > 6_000_000, "a namespace of several MB: {:?}", c.size());
    let mut watches = Vec::with_capacity(2000);
    let before = live();
    for i in 0..2000 {
        let filter = if i % 2 == 0 {
            WatchFilter::prefix(NS)
        } else {
            WatchFilter { labels: LabelSelector::parse("app=rare").unwrap(), ..WatchFilter::prefix(NS) }
        };
        watches.push(c.watch(filter, WatchStart::Now, false).unwrap());
    }
    let grown = live() - before;
    // Each watch: its registration, its filter and its queue's header; none holds a
    // copy of the objects, nor a list of pointers to them (1,500 × 8 bytes each).
    let per_watch = grown / 2000;
    eprintln!(
        "2,000 watches with initial state over {} bytes: {grown} bytes, {per_watch} per watch",
        c.size().object_bytes
    );
    assert!(per_watch < 1024, "2,000 watches grew the heap by {grown} bytes ({per_watch} per watch)");
    assert_eq!(
        c.watchers_size(),
        WatchersSize { watchers: 2000, queued: 0, snapshots: 1, snapshot_objects: OBJECTS },
        "one snapshot of the namespace between them"
    );
    assert!(watches.iter().all(|w| Arc::ptr_eq(w.initial.snapshot(), watches[0].initial.snapshot())));

    // Reading them lazily allocates nothing per watch: the objects are the cache's own.
    // (The first selective read parses each object once for its labels, and the cache
    // keeps that, as it does for a list with a selector: once per object, not per watch.)
    let mut seen = watches[1].initial.by_ref().count();
    let before_reading = live();
    for w in watches.iter_mut().take(10) {
        seen += w.initial.by_ref().count();
    }
    assert_eq!(seen, 5 * OBJECTS + 5 * OBJECTS / 10, "all of them for five, the app=rare tenth for five");
    assert!(live() - before_reading < 4096, "reading allocated {} bytes", live() - before_reading);

    drop(watches);
    assert_eq!(c.watchers_size(), WatchersSize { watchers: 0, queued: 0, snapshots: 0, snapshot_objects: 0 });
}

#[test]
fn a_snapshot_is_shared_until_its_collection_changes() {
    let _one = alone();
    let c = big_cache(CacheConfig::default());
    let mut first = c.watch(WatchFilter::prefix(NS), WatchStart::Now, false).unwrap();
    // A change elsewhere moves the rv but not this collection: still shared.
    c.apply(11, vec![added("y", 11, "other")]);
    let second = c.watch(WatchFilter::prefix(NS), WatchStart::Now, false).unwrap();
    assert_eq!(second.rv, 11);
    assert!(Arc::ptr_eq(first.initial.snapshot(), second.initial.snapshot()));
    // A change in it: the next watch takes a new snapshot that has it; the first watch
    // still reads the state at its rv, and gets the change as a live event.
    c.apply(12, vec![added("new", 12, "big")]);
    let mut third = c.watch(WatchFilter::prefix(NS), WatchStart::Now, false).unwrap();
    assert!(!Arc::ptr_eq(first.initial.snapshot(), third.initial.snapshot()));
    assert_eq!(c.watchers_size().snapshots, 1, "the old one is held by its two readers only, not remembered");
    assert_eq!(first.initial.by_ref().count(), OBJECTS);
    assert!(matches!(first.watch.rx.try_recv(), Ok(kuorum_watch::WatchItem::Event(_, e)) if e.rv == 12));
    assert_eq!(third.initial.by_ref().count(), OBJECTS + 1);
    assert!(third.watch.rx.try_recv().is_err(), "its state has the change: no event for it");
    // A collection that is a prefix of another does not share its snapshot.
    let all = c.watch(WatchFilter::prefix("/registry/core/configmaps/"), WatchStart::Now, false).unwrap();
    assert_eq!(all.initial.count(), OBJECTS + 3);
    drop((first, second, third));
    assert_eq!(c.watchers_size().snapshots, 0, "held only while a watch reads one");
}

#[test]
fn two_thousand_watchers_that_never_read_are_cut_off_and_freed() {
    let _one = alone();
    const QUEUE: usize = 64;
    let c = big_cache(CacheConfig { watcher_queue: QUEUE, ..CacheConfig::default() });
    let mut watches: Vec<_> =
        (0..2000).map(|_| c.watch(WatchFilter::prefix(NS), WatchStart::Now, false).unwrap()).collect();
    let before = live();
    // Events keep coming; nobody reads. Each queue holds at most QUEUE items, 16 bytes
    // each (the events are shared), so the watchers together hold at most
    // 2,000 × 64 × 16 = 2 MB whatever the objects' size.
    let mut peak = 0;
    for rv in 11..=(11 + QUEUE as u64) {
        c.apply(rv, vec![added(&format!("n{rv}"), rv, "big")]);
        let size = c.watchers_size();
        assert!(size.queued <= size.watchers * QUEUE);
        peak = peak.max(live() - before);
    }
    // The window keeps the 65 events (each ~4 KB, once); the queues are what is per watcher.
    let events = 65 * (DATA as isize + 512);
    assert!(peak - events < 2000 * (QUEUE as isize) * 16 * 2, "peak {peak} bytes above the start");
    eprintln!("2,000 watchers that never read: peak {peak} bytes above the start (the events: about {events})");
    assert_eq!(c.watcher_count(), 0, "the 65th event found every queue full: all cut off");
    assert_eq!(c.watchers_size().queued, 0);
    let after = live() - before;
    assert!(after - events < 2000 * 256, "the cut freed the queues: {after} bytes above the start");
    for w in &mut watches {
        assert_eq!(w.watch.rx.try_recv().err(), Some(TryRecvError::Closed), "each stream ends");
    }
}

#[test]
fn a_reset_ends_every_watch() {
    let _one = alone();
    let c = big_cache(CacheConfig::default());
    let mut w = c.watch(WatchFilter::prefix(NS), WatchStart::After(10), false).unwrap().watch;
    c.reset(20, 20, vec![], vec![]);
    assert_eq!(w.rx.try_recv().err(), Some(TryRecvError::Closed));
    assert_eq!(c.watchers_size(), WatchersSize { watchers: 0, queued: 0, snapshots: 0, snapshot_objects: 0 });
}
