//! Owns W1-W11: every watch session, and every watcher's chain of sessions across
//! nodes, against the replay.
//!
//! Kubernetes resourceVersions are exclusive: a watch from N delivers changes with
//! RV > N. A session that started after N and last saw RV M (an event or a bookmark)
//! must have delivered exactly the replay's changes under its prefix in (N, M], in
//! order, with the right types (W1 filter, W2 ordered, W3 unique, W5 reliable, W7 event
//! types; W6/W10/W11 because resumes and list-then-watch are sessions like any other).
//! A bookmark is never ahead: it is not below the start, not above what any node had
//! applied, and no later event has an RV at or below it (W4, W9). A 410 is sent only
//! for a start below the compacted RV (W8).
//!
//! Worked example: a watcher lists at RV 40 on node 2, watches from 40 and sees
//! MODIFIED k1 @44 and a bookmark @47; it resumes from 47 on node 3. The replay under
//! its prefix has changes at 44 and 49. Session one owes exactly [44] (it claimed 47 with
//! the bookmark); session two owes [49] once it has seen anything at or above 49.

use crate::check::Violation;
use crate::history::{EventType, WatchItem, WatchSession, WatchStart};
use crate::replay::Replay;

pub fn check(sessions: &[WatchSession], replay: &Replay) -> Vec<Violation> {
    let mut v = Vec::new();
    for s in sessions {
        check_session(s, replay, &mut v);
    }
    v
}

fn check_session(s: &WatchSession, replay: &Replay, v: &mut Vec<Violation>) {
    let who = format!("watcher {} session {} on node {} ({:?})", s.watcher, s.seq, s.node, s.start);
    let mut items = s.items.iter().peekable();
    // The RV the session's change stream starts after.
    let after = match s.start {
        WatchStart::After(rv) => rv,
        WatchStart::InitialEvents => {
            // ADDED events for the snapshot, then the bookmark that ends them.
            let mut initial = std::collections::BTreeMap::new();
            let mut end = None;
            while let Some(item) = items.peek() {
                match item {
                    WatchItem::Event { kind: EventType::Added, key, seen } => {
                        initial.insert(key.clone(), *seen);
                        items.next();
                    }
                    WatchItem::Bookmark { rv, initial_end: true } => {
                        end = Some(*rv);
                        items.next();
                        break;
                    }
                    _ => break,
                }
            }
            let Some(end) = end else {
                // Without its end bookmark the stream may only have been cut off or ended
                // by an ERROR event (a 504 when the node could not catch up in time).
                if let Some(item) = items.find(|i| !matches!(i, WatchItem::Error { .. })) {
                    v.push(Violation::new(
                        "W11",
                        format!("{who}: initial events followed by {item:?} before their end bookmark"),
                    ));
                }
                return;
            };
            let want = replay.state_at(&s.prefix, end);
            if initial != want {
                v.push(Violation::new(
                    "W11",
                    format!("{who}: initial events at RV {end} were {initial:?}, the replay has {want:?}"),
                ));
            }
            end
        }
    };

    let mut delivered = Vec::new();
    let mut last = after;
    let mut claimed = after;
    for item in items {
        match item {
            WatchItem::Event { kind, key, seen } => {
                if !key.starts_with(&s.prefix) {
                    v.push(Violation::new("W1", format!("{who}: event for {key} outside {}", s.prefix)));
                }
                if seen.mod_rv <= last {
                    v.push(Violation::new(
                        "W2",
                        format!("{who}: event at RV {} after RV {last} (out of order or repeated)", seen.mod_rv),
                    ));
                }
                last = last.max(seen.mod_rv);
                claimed = claimed.max(seen.mod_rv);
                delivered.push((seen.mod_rv, *kind, key.clone(), *seen));
            }
            WatchItem::Bookmark { rv, .. } => {
                if *rv < after || *rv > replay.max_applied {
                    v.push(Violation::new(
                        "W9",
                        format!(
                            "{who}: bookmark at RV {rv} outside [start {after}, highest applied {}]",
                            replay.max_applied
                        ),
                    ));
                }
                if *rv < last {
                    v.push(Violation::new("W4", format!("{who}: bookmark at RV {rv} after an event at RV {last}")));
                }
                // Events after a bookmark must be above it: treat it as the new floor.
                last = last.max(*rv);
                claimed = claimed.max(*rv);
            }
            WatchItem::Error { code } => {
                if *code == 410 && after >= replay.compacted() {
                    v.push(Violation::new(
                        "W8",
                        format!("{who}: 410 for a start at RV {after}, compacted only up to {}", replay.compacted()),
                    ));
                }
            }
        }
    }

    // W5/W7: exactly the replay's changes in (after, claimed], in order, with their types.
    let want: Vec<(u64, EventType, String, crate::history::Seen)> = replay
        .changes_between(&s.prefix, after, claimed)
        .into_iter()
        .map(|(rv, a)| (rv, a.kind, a.key.clone(), a.seen))
        .collect();
    if delivered != want {
        let first_diff =
            delivered.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(delivered.len().min(want.len()));
        v.push(Violation::new(
            if delivered.len() < want.len() { "W5" } else { "W7" },
            format!(
                "{who}: delivered {} events for ({after}, {claimed}], the replay has {}; first difference at #{first_diff}: \
                 got {:?}, want {:?}",
                delivered.len(),
                want.len(),
                delivered.get(first_diff),
                want.get(first_diff)
            ),
        ));
    }
}
