//! The watch cache's contract: continuity from any rv in the window, 410 below it, the
//! filtered view, slow watchers cut off, bookmarks never ahead of events.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::selector::LabelSelector;
use kuorum_store::apply::{Change, ChangeKind};
use kuorum_watch::{CacheConfig, EventType, TooOld, TryRecvError, WatchCache, WatchFilter, WatchItem, WatchStart};

const P: &str = "/registry/core/configmaps/";

fn obj(name: &str, rv: u64, app: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"d","resourceVersion":"{rv}","labels":{{"app":"{app}"}}}}}}"#
    ))
}

fn key(name: &str) -> String {
    format!("{P}d/{name}")
}

fn change(kind: ChangeKind, name: &str, rv: u64, app: &str, prev: Option<(u64, &str)>) -> Change {
    Change { key: key(name), rv, kind, object: obj(name, rv, app), prev: prev.map(|(r, a)| obj(name, r, a)) }
}

fn drain(w: &mut kuorum_watch::Watch) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    while let Ok(item) = w.rx.try_recv() {
        match item {
            WatchItem::Event(t, e) => out.push((t.as_str().to_string(), e.rv)),
            WatchItem::Bookmark(rv) => out.push(("BOOKMARK".to_string(), rv)),
        }
    }
    out
}

fn cache_with_history() -> Arc<WatchCache> {
    let c = WatchCache::new(CacheConfig::default());
    c.reset(4, 4, vec![], vec![]);
    c.apply(5, vec![change(ChangeKind::Added, "a", 5, "x", None)]);
    c.apply(6, vec![change(ChangeKind::Added, "b", 6, "y", None)]);
    c.apply(7, vec![]); // a membership entry: no change, rv moves
    c.apply(8, vec![change(ChangeKind::Modified, "a", 8, "y", Some((5, "x")))]);
    c.apply(9, vec![change(ChangeKind::Deleted, "b", 9, "y", Some((6, "y")))]);
    c
}

#[test]
fn watches_resume_exactly_after_their_rv() {
    let c = cache_with_history();
    assert_eq!(c.rv(), 9);
    for (from, want) in [(4, vec![5, 6, 8, 9]), (5, vec![6, 8, 9]), (7, vec![8, 9]), (9, vec![])] {
        let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(from), false).unwrap().watch;
        let got: Vec<u64> = drain(&mut w).into_iter().map(|x| x.1).collect();
        assert_eq!(got, want, "from {from}");
    }
    // Live events follow the replay, in order, once each.
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(8), false).unwrap().watch;
    c.apply(10, vec![change(ChangeKind::Added, "c", 10, "x", None)]);
    assert_eq!(drain(&mut w), vec![("DELETED".into(), 9), ("ADDED".into(), 10)]);
}

/// (objects, object_bytes, events) of `c`.
fn sizes(c: &WatchCache) -> (usize, usize, usize) {
    let s = c.size();
    (s.objects, s.object_bytes, s.events)
}

/// A client rewriting a big object: every event keeps the version it replaced, and the
/// window is cut at its byte budget instead of holding `max_events` of them; a watch from
/// before what is left gets 410 (the client relists), one from inside it resumes.
#[test]
fn rewrites_of_a_big_object_keep_the_window_within_its_bytes() {
    const BIG: usize = 64 << 10;
    const BUDGET: usize = 4 << 20;
    let c = WatchCache::new(CacheConfig { max_event_bytes: BUDGET, ..CacheConfig::default() });
    c.reset(1, 1, vec![], vec![]);
    let big =
        |rv: u64| Bytes::from(format!(r#"{{"metadata":{{"resourceVersion":"{rv}"}},"pad":"{}"}}"#, "x".repeat(BIG)));
    c.apply(2, vec![Change { key: key("big"), rv: 2, kind: ChangeKind::Added, object: big(2), prev: None }]);
    for rv in 3..1003 {
        let (object, prev) = (big(rv), Some(big(rv - 1)));
        c.apply(rv, vec![Change { key: key("big"), rv, kind: ChangeKind::Modified, object, prev }]);
    }
    let size = c.size();
    assert!(size.event_bytes <= BUDGET, "{size:?}");
    // Each event keeps the version it replaced and its watch line: 128 KiB.
    assert!(size.events <= 32 && size.events >= 28, "about 4 MiB / 128 KiB events: {size:?}");
    let oldest = c.oldest();
    assert_eq!(oldest, 1002 - size.events as u64, "every change after oldest is in the window");
    let refused = c.watch(WatchFilter::prefix(P), WatchStart::After(oldest - 1), false).err();
    assert_eq!(refused, Some(TooOld { requested: oldest - 1, oldest }));
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(oldest), false).unwrap().watch;
    assert_eq!(drain(&mut w).len(), size.events);
}

#[test]
fn below_the_window_is_too_old_and_compaction_moves_it() {
    let c = cache_with_history();
    assert_eq!(
        c.watch(WatchFilter::prefix(P), WatchStart::After(3), false).err(),
        Some(TooOld { requested: 3, oldest: 4 })
    );
    c.compact(6);
    assert_eq!(c.oldest(), 6);
    assert!(c.watch(WatchFilter::prefix(P), WatchStart::After(5), false).is_err());
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(6), false).unwrap().watch;
    assert_eq!(drain(&mut w).len(), 2, "events 8 and 9 remain");
}

#[test]
fn a_watch_from_now_gets_the_state_then_live_events() {
    let c = cache_with_history();
    let mut started = c.watch(WatchFilter::prefix(P), WatchStart::Now, false).unwrap();
    assert_eq!(started.rv, 9);
    assert_eq!(started.initial.by_ref().map(|o| o.key.clone()).collect::<Vec<_>>(), vec![key("a")]);
    assert!(drain(&mut started.watch).is_empty(), "nothing before the state is replayed");
    c.apply(10, vec![change(ChangeKind::Modified, "a", 10, "z", Some((8, "y")))]);
    assert_eq!(drain(&mut started.watch), vec![("MODIFIED".into(), 10)]);
}

#[test]
fn selectors_turn_transitions_into_added_and_deleted() {
    let c = cache_with_history();
    let filter = WatchFilter { labels: LabelSelector::parse("app=y").unwrap(), ..WatchFilter::prefix(P) };
    let mut w = c.watch(filter.clone(), WatchStart::After(4), false).unwrap().watch;
    // a: added with app=x (not seen), modified to app=y (seen as ADDED); b: app=y added, deleted.
    assert_eq!(drain(&mut w), vec![("ADDED".into(), 6), ("ADDED".into(), 8), ("DELETED".into(), 9)]);
    c.apply(10, vec![change(ChangeKind::Modified, "a", 10, "x", Some((8, "y")))]);
    assert_eq!(drain(&mut w), vec![("DELETED".into(), 10)], "leaving the selector is a deletion");
    let page = c.list(&filter, None, 10);
    assert!(page.items.is_empty());
}

#[test]
fn a_slow_watcher_is_cut_off_and_others_go_on() {
    let c = WatchCache::new(CacheConfig { watcher_queue: 4, ..CacheConfig::default() });
    c.reset(0, 0, vec![], vec![]);
    let mut slow = c.watch(WatchFilter::prefix(P), WatchStart::After(0), false).unwrap().watch;
    let mut fast = c.watch(WatchFilter::prefix(P), WatchStart::After(0), false).unwrap().watch;
    for rv in 1..=10u64 {
        c.apply(rv, vec![change(ChangeKind::Added, &format!("o{rv}"), rv, "x", None)]);
        drain(&mut fast);
    }
    assert_eq!(c.watcher_count(), 1, "the slow one was dropped");
    assert_eq!(slow.rx.len(), 0, "its queue is emptied at the cut: a client that stopped reading holds nothing");
    assert_eq!(slow.rx.try_recv().err(), Some(TryRecvError::Closed), "its stream ends; the client resumes");
    assert_eq!(c.watchers_size().queued, 0, "the fast one read everything");
}

#[test]
fn a_watch_whose_replay_outgrows_its_queue_is_refused_as_too_old() {
    // Cut off at once, its client would resume from the same rv and be cut off again,
    // for ever (the one-hour chaos run's replay from rv 1 met it): 410, and it relists.
    let c = WatchCache::new(CacheConfig { watcher_queue: 4, ..CacheConfig::default() });
    c.reset(0, 0, vec![], vec![]);
    for rv in 1..=10u64 {
        c.apply(rv, vec![change(ChangeKind::Added, &format!("o{rv}"), rv, "x", None)]);
    }
    let refused = c.watch(WatchFilter::prefix(P), WatchStart::After(0), false).err();
    assert_eq!(refused, Some(TooOld { requested: 0, oldest: 5 }), "the fifth event overflowed");
    assert_eq!(c.watcher_count(), 0);
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(6), false).unwrap().watch;
    assert_eq!(drain(&mut w).len(), 4, "events 7..=10 fit");
}

#[test]
fn bookmarks_follow_the_events_they_cover() {
    let c = WatchCache::new(CacheConfig { bookmark_every: Duration::ZERO, ..CacheConfig::default() });
    c.reset(0, 0, vec![], vec![]);
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(0), true).unwrap().watch;
    c.apply(1, vec![change(ChangeKind::Added, "a", 1, "x", None)]);
    c.apply(2, vec![]);
    c.bookmark_tick();
    assert_eq!(drain(&mut w), vec![("ADDED".into(), 1), ("BOOKMARK".into(), 2)]);
    let mut quiet = c.watch(WatchFilter::prefix(P), WatchStart::After(2), false).unwrap().watch;
    c.bookmark_tick();
    assert!(drain(&mut quiet).is_empty(), "no bookmarks unless asked for");
}

#[test]
fn lists_page_in_key_order_with_remaining_counts() {
    let c = WatchCache::new(CacheConfig::default());
    let objects = (0..5).map(|i| (key(&format!("o{i}")), obj(&format!("o{i}"), i + 1, "x"))).collect();
    c.reset(5, 5, objects, vec![]);
    let p1 = c.list(&WatchFilter::prefix(P), None, 2);
    assert_eq!(p1.rv, 5);
    assert_eq!(p1.items.len(), 2);
    assert_eq!((p1.more, p1.remaining), (true, Some(3)));
    let p2 = c.list(&WatchFilter::prefix(P), Some(&p1.items[1].key), 10);
    assert_eq!(p2.items.len(), 3);
    assert_eq!((p2.more, p2.remaining), (false, None));
    // Uncounted: whether more follow, not how many.
    let p1 = c.page(&WatchFilter::prefix(P), None, 2, false);
    assert_eq!((p1.items.len(), p1.more, p1.remaining), (2, true, None));
    let last = c.page(&WatchFilter::prefix(P), Some(&key("o2")), 2, false);
    assert_eq!((last.items.len(), last.more, last.remaining), (2, false, None));
    assert_eq!(c.get(&key("o3")).1.map(|o| o.rv), Some(4));
    let _ = EventType::Added;
}

#[test]
fn a_list_holds_its_prefix_and_nothing_beside_it() {
    let c = WatchCache::new(CacheConfig::default());
    // Neighbours of the namespace `d`: keys that sort just before, inside and just after
    // the range `{P}d/`..`{P}d0`, and a namespace whose name is not ASCII.
    let keys = ["d", "d-x", "d.", "d/a", "d/z", "d0", "d0/a", "da/a", "dé/a", "dé/b", "déa/a", "e/a"];
    let objects = keys.iter().enumerate().map(|(i, k)| (format!("{P}{k}"), obj(k, i as u64 + 1, "x"))).collect();
    c.reset(20, 20, objects, vec![]);
    let listed = |prefix: &str, limit: usize| {
        let l = c.list(&WatchFilter::prefix(format!("{P}{prefix}")), None, limit);
        (l.items.iter().map(|o| o.key[P.len()..].to_string()).collect::<Vec<_>>(), l.remaining)
    };
    assert_eq!(listed("d/", 100), (vec!["d/a".to_string(), "d/z".to_string()], None));
    assert_eq!(listed("d/", 1), (vec!["d/a".to_string()], Some(1)));
    assert_eq!(listed("dé/", 100), (vec!["dé/a".to_string(), "dé/b".to_string()], None));
    assert_eq!(listed("d", 100).0.len(), 11, "every key starting with d, none after");
    let filter = WatchFilter { labels: LabelSelector::parse("app=y").unwrap(), ..WatchFilter::prefix(P) };
    let selected = c.list(&filter, None, 100);
    assert!(selected.items.is_empty(), "selectors still apply inside the range");
}

#[test]
fn an_event_shares_the_version_it_replaced_with_the_event_before() {
    let c = cache_with_history();
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(4), false).unwrap().watch;
    let mut events = Vec::new();
    while let Ok(WatchItem::Event(_, e)) = w.rx.try_recv() {
        events.push(e);
    }
    let (added_a, modified_a) = (&events[0], &events[2]);
    assert_eq!((added_a.rv, modified_a.rv), (5, 8));
    let prev = modified_a.prev.as_ref().expect("a MODIFIED event has its previous version");
    assert!(Arc::ptr_eq(prev, &added_a.object), "one copy of version 5 in the window, not two");
    assert_eq!(prev.rv, 5);
    // A prev the cache does not hold as its current version is built from the change's bytes.
    c.apply(10, vec![change(ChangeKind::Modified, "a", 10, "z", Some((7, "q")))]);
    let Ok(WatchItem::Event(_, e)) = w.rx.try_recv() else { panic!("the live event") };
    let prev = e.prev.as_ref().unwrap();
    assert_eq!(prev.rv, 7);
    assert!(!Arc::ptr_eq(prev, &modified_a.object));
}

/// A cache loaded from storage (start-up, snapshot install) holds each version once: the
/// engine hands the current objects and the window's changes over as separate copies.
#[test]
fn a_reset_shares_each_version_between_objects_and_events() {
    let c = WatchCache::new(CacheConfig::default());
    let objects = vec![(key("a"), obj("a", 8, "y")), (key("c"), obj("c", 3, "z"))];
    let changes = vec![
        change(ChangeKind::Added, "a", 5, "x", None),
        change(ChangeKind::Added, "b", 6, "y", None),
        change(ChangeKind::Modified, "a", 8, "y", Some((5, "x"))),
        change(ChangeKind::Deleted, "b", 9, "y", Some((6, "y"))),
    ];
    c.reset(9, 4, objects, changes);
    let mut w = c.watch(WatchFilter::prefix(P), WatchStart::After(4), false).unwrap().watch;
    let mut events = Vec::new();
    while let Ok(WatchItem::Event(_, e)) = w.rx.try_recv() {
        events.push(e);
    }
    assert_eq!(events.iter().map(|e| e.rv).collect::<Vec<_>>(), vec![5, 6, 8, 9]);
    let (_, current_a) = c.get(&key("a"));
    let current_a = current_a.unwrap();
    assert_eq!(current_a.rv, 8);
    assert!(Arc::ptr_eq(&events[2].object, &current_a), "the event at the current version is the current object");
    assert!(Arc::ptr_eq(events[2].prev.as_ref().unwrap(), &events[0].object), "its prev is the event before it");
    assert!(Arc::ptr_eq(events[3].prev.as_ref().unwrap(), &events[1].object), "so is a deletion's");
    assert_eq!(c.get(&key("c")).1.unwrap().rv, 3, "an object older than the window keeps its rv");
}

#[test]
fn the_size_follows_every_change_and_a_reset() {
    let c = cache_with_history();
    // After history: "a" at rv 8 is the only object; events 5, 6, 8, 9.
    let a8 = obj("a", 8, "y").len();
    assert_eq!(sizes(&c), (1, a8, 4));
    c.apply(10, vec![change(ChangeKind::Added, "c", 10, "longer-label", None)]);
    let c10 = obj("c", 10, "longer-label").len();
    assert_eq!(sizes(&c), (2, a8 + c10, 5));
    c.apply(11, vec![change(ChangeKind::Modified, "a", 11, "z", Some((8, "y")))]);
    let a11 = obj("a", 11, "z").len();
    assert_eq!(c.size().object_bytes, a11 + c10);
    c.apply(12, vec![change(ChangeKind::Deleted, "c", 12, "longer-label", Some((10, "longer-label")))]);
    assert_eq!(sizes(&c), (1, a11, 7));
    // A reset counts what it is given.
    c.reset(20, 20, vec![(key("x"), obj("x", 20, "q")), (key("y"), obj("y", 19, "q"))], vec![]);
    let want = obj("x", 20, "q").len() + obj("y", 19, "q").len();
    assert_eq!(sizes(&c), (2, want, 0));
}

#[test]
fn a_prefix_count_follows_adds_deletes_and_resets_but_not_updates() {
    let c = cache_with_history();
    // After history: "a" is the only object under `{P}d/`.
    let d = c.counter(&format!("{P}d/"));
    let other = c.counter(&format!("{P}e/"));
    assert_eq!((d.get(), other.get()), (1, 0), "counted from what the cache holds");
    assert!(Arc::ptr_eq(&d, &c.counter(&format!("{P}d/"))), "one counter per prefix");
    c.apply(10, vec![change(ChangeKind::Added, "c", 10, "x", None)]);
    c.apply(11, vec![change(ChangeKind::Modified, "c", 11, "y", Some((10, "x")))]);
    assert_eq!(d.get(), 2, "an update is not a new object");
    c.apply(12, vec![change(ChangeKind::Deleted, "a", 12, "y", Some((8, "y")))]);
    c.apply(13, vec![change(ChangeKind::Deleted, "zz", 13, "y", None)]);
    assert_eq!(d.get(), 1, "a delete of what is not there counts nothing");
    assert_eq!(other.get(), 0, "other prefixes are untouched");
    c.reset(
        20,
        20,
        vec![(key("x"), obj("x", 20, "q")), (key("y"), obj("y", 19, "q")), (key("z"), obj("z", 18, "q"))],
        vec![],
    );
    assert_eq!(d.get(), 3, "a reset counts again");
}
