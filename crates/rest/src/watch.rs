//! WATCH (`?watch=true`): a 200 response streaming one JSON event per line, per the watch
//! table ([`crate::consistency::WatchPlan`]):
//!
//! - RV unset: read barrier, then synthetic ADDED events for the cache's state, then every
//!   change after it ("Get State and Start at Most Recent"). RV `0`: the same without the
//!   barrier ("... at Any"). RV `N`: every change after N, no initial state ("Start at
//!   Exact"); an N the cache has not reached yet simply has its first events later.
//! - `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan`): the initial
//!   ADDED events for a state not older than the request's RV (barrier when unset), then,
//!   with `allowWatchBookmarks=true`, a BOOKMARK annotated `k8s.io/initial-events-end`
//!   at the state's resourceVersion, then the changes. An RV the node does not reach
//!   within 3 s ends the stream with an ERROR event carrying the 504 "Too large resource
//!   version" Status.
//! - A start below the cache's window: HTTP 200 with one ERROR event carrying a 410
//!   Expired Status (`too old resource version: N (OLDEST)`), then the end, which is what
//!   client-go, kube-rs and the Python client relist on.
//! - `allowWatchBookmarks=true`: periodic BOOKMARK events with the resource's kind and
//!   apiVersion and only `metadata.resourceVersion`; never without the parameter.
//! - The initial ADDED events are encoded lazily from the cache's shared snapshot of the
//!   collection, about 64 KiB at a time, the next chunk once the connection has written
//!   the last: a watch holds one chunk of them at most, however large the collection or
//!   slow the client ([`Initial`]).
//! - The stream ends after `timeoutSeconds` (default 30–60 min, as kube-apiserver), when
//!   the watcher is cut off for being too slow (its queue of `watcher_queue` events was
//!   full: as kube-apiserver's cacher, which closes such a watch; client-go then watches
//!   again from the last resourceVersion it saw), or when the cache is reset; the client
//!   resumes from the last resourceVersion it saw.
//!
//! Label and field selectors filter the events (an object that starts or stops matching
//! arrives as ADDED or DELETED). A watch on an object's URL watches that object, as the
//! collection with `fieldSelector=metadata.name=<name>` would.
//!
//! With `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (`kubectl get -w`) each
//! event's object is a Table with one row and the object's resourceVersion; only the
//! first has `columnDefinitions` (later ones `null`), as kube-apiserver sends them. With
//! `as=PartialObjectMetadata` it is the object's metadata. BOOKMARK and ERROR events are
//! the same either way. A plain JSON watch does none of this work: its events are the
//! shared encoded lines.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use kuorum_api::selector::FieldRequirement;
use kuorum_api::{ApiError, ResourceDef};
use kuorum_watch::{event_line, Event, InitialState, Obj, TooOld, Watch, WatchCache, WatchItem, WatchStart};
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant, Sleep};

use crate::chaos::{Chaos, StrikeReceiver, WatchAction};
use crate::consistency::{wait_fresh, ListOptions, WatchPlan};
use crate::list::{filter_of, serves_as_stored};
use crate::negotiate::{negotiate_output, Output, JSON};
use crate::object::served_bytes;
use crate::table::{TableView, WatchView};
use crate::target::{Ctx, Target};
use crate::RestState;

/// kube-apiserver's `--min-request-timeout`: a watch without `timeoutSeconds` lasts
/// between one and two of these.
pub(crate) const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// Roughly how many bytes go into one chunk of the response when several events are
/// ready at once.
const CHUNK_BYTES: usize = 64 * 1024;

/// An initial object at least this large is sent as the cache's bytes, not copied into
/// a chunk: a watch's own initial bytes stay under `CHUNK_BYTES + LARGE_OBJECT`.
const LARGE_OBJECT: usize = 16 * 1024;

const ADDED_HEAD: &[u8] = b"{\"type\":\"ADDED\",\"object\":";

/// Initial objects a stream looks at in one go when a selector leaves them out.
const INITIAL_SCAN: usize = 4096;

/// With many watches open on a node, each stream writes at most once per
/// `watches × FLUSH_SPACING_PER_WATCH` (capped at [`MAX_FLUSH_INTERVAL`]); events that
/// arrive in between go out in the same write. Every write is a syscall and a wake-up of
/// the client on both ends, and with 1,000 watches and 500 events/s they, not encoding,
/// are what the CPU runs out on. This caps a node at about 50,000 writes/s however many
/// watches it serves, at the price of at most 10 ms of added delivery latency. Below
/// 50 watches the interval is under tokio's 1 ms timer granularity and events go out as
/// they come, as before.
const FLUSH_SPACING_PER_WATCH: Duration = Duration::from_micros(20);
const MAX_FLUSH_INTERVAL: Duration = Duration::from_millis(10);

/// The least time between two writes of one stream when `watches` are open on the node
/// (zero: write at once).
fn flush_interval(watches: usize) -> Duration {
    let interval = (FLUSH_SPACING_PER_WATCH * watches.min(u32::MAX as usize) as u32).min(MAX_FLUSH_INTERVAL);
    if interval < Duration::from_millis(1) {
        Duration::ZERO
    } else {
        interval
    }
}

pub(crate) async fn watch(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    let view = match negotiate_output(&ctx.headers)? {
        Output::Json => None,
        Output::Table(version) => Some(WatchView::Table {
            view: TableView::for_request(t, version, &ctx.query)?,
            clock: st.clock.clone(),
            headers_sent: false,
        }),
        Output::PartialObjectMetadata(version) => Some(WatchView::Partial(version)),
        // kube-apiserver cannot make a list of an event's object and sends the object.
        Output::PartialObjectMetadataList(_) => None,
    };
    let mut filter = filter_of(&ctx.query, t)?;
    if let Some(name) = &t.name {
        filter.fields.0.push(FieldRequirement { field: "metadata.name".into(), value: name.clone(), equals: true });
    }
    let opts = ListOptions::parse(&ctx.query)?;
    let plan = opts.watch_plan()?;
    let timeout = opts.timeout.unwrap_or_else(|| {
        let jitter = st.entropy.next_u64() % MIN_REQUEST_TIMEOUT.as_secs();
        MIN_REQUEST_TIMEOUT + Duration::from_secs(jitter)
    });
    // A timeout past what the clock can represent is no timeout.
    let now = Instant::now();
    let deadline = now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));

    let (start, end_bookmark) = match plan {
        WatchPlan::WithState { wait, end_bookmark, soft_wait } => {
            match wait_fresh(st, wait).await {
                Ok(()) => {}
                Err(e) if soft_wait && e.code == 504 => return Ok(error_stream(&e)),
                Err(e) => return Err(e),
            }
            (WatchStart::Now, end_bookmark)
        }
        WatchPlan::FromNow { wait } => {
            wait_fresh(st, wait).await?;
            (WatchStart::After(st.cache.rv()), false)
        }
        WatchPlan::After(n) => (WatchStart::After(n), false),
    };
    let started = match st.cache.watch(filter, start, opts.allow_bookmarks) {
        Ok(s) => s,
        Err(TooOld { requested, oldest }) => {
            return Ok(error_stream(&ApiError::expired(format!("too old resource version: {requested} ({oldest})"))))
        }
    };
    let initial = (start == WatchStart::Now).then(|| Initial {
        objects: started.initial,
        rv: started.rv,
        end_bookmark,
        written: Arc::new(Notify::new()),
        pieces: VecDeque::new(),
    });
    let stream = EventStream {
        initial,
        watch: started.watch,
        def: t.def,
        deadline: Box::pin(sleep_until(deadline)),
        view,
        cache: st.cache.clone(),
        last_write: None,
        flush_timer: Box::pin(sleep_until(now)),
        strikes: st.chaos.as_ref().map(|c| (c.clone(), c.subscribe())),
        ended: false,
        convert: crate::conversion::by_webhook(t).then(|| Arc::new((st.clone(), t.clone()))),
    };
    let body = Body::from_stream(futures::stream::unfold(stream, EventStream::next));
    Ok(streaming_response(body))
}

/// Resolves with the action of the next strike that hits this stream; never without
/// chaos mode.
async fn struck(strikes: &mut Option<(Arc<Chaos>, StrikeReceiver)>) -> WatchAction {
    let Some((chaos, rx)) = strikes.as_mut() else { return std::future::pending().await };
    loop {
        if rx.changed().await.is_err() {
            return std::future::pending().await;
        }
        let strike = rx.borrow_and_update().1;
        if let Some(strike) = strike.filter(|s| chaos.hits(s)) {
            return strike.action;
        }
    }
}

/// A 200 watch response.
fn streaming_response(body: Body) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    resp
}

/// A 200 watch response with a single ERROR event carrying `e`'s Status.
fn error_stream(e: &ApiError) -> Response {
    let status = serde_json::to_vec(&e.to_json()).unwrap_or_default();
    streaming_response(Body::from(event_line("ERROR", &status)))
}

/// `{"type":"BOOKMARK","object":{"kind":..,"apiVersion":..,"metadata":{"resourceVersion":..}}}`
/// and a newline; `initial_end` adds the `k8s.io/initial-events-end` annotation.
pub(crate) fn bookmark_line(def: &ResourceDef, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = serde_json::json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = serde_json::json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": meta});
    event_line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

/// The event line of `obj` as `view` presents it (empty for an object that cannot be
/// served).
fn view_line(view: &mut WatchView, event_type: &str, obj: &Obj) -> Bytes {
    match obj.parse().filter(|v| v.is_object()) {
        Some(v) => event_line(event_type, &view.encode(&v)),
        None => {
            tracing::warn!("unservable object {}: not a JSON object", obj.key);
            Bytes::new()
        }
    }
}

/// Appends the ADDED line of `obj` (nothing, logged, for an object that cannot be
/// served, as for live events).
fn put_added(buf: &mut BytesMut, obj: &Obj, def: &'static ResourceDef) {
    let served;
    let bytes = if serves_as_stored(obj, def) {
        &obj.bytes
    } else {
        match served_bytes(&obj.bytes, def) {
            Ok(b) => {
                served = b;
                &served
            }
            Err(e) => {
                tracing::warn!("unservable object {}: {e}", obj.key);
                return;
            }
        }
    };
    buf.put_slice(ADDED_HEAD);
    buf.put_slice(bytes);
    buf.put_slice(b"}\n");
}

/// The initial events of a watch still to be sent: read from the cache's shared
/// snapshot and encoded one chunk at a time, the next one only once the connection has
/// written the last one out (to the socket, or to TLS's bounded buffer). So a watch
/// holds one chunk of its initial events at most, however large the collection, and a
/// client that reads slowly or not at all costs no more: hyper would otherwise take
/// chunks until its write buffer (`max_buf_size`, or 16 chunks) is full.
struct Initial {
    objects: InitialState,
    /// The state's resourceVersion.
    rv: u64,
    /// Whether the `k8s.io/initial-events-end` bookmark follows the objects.
    end_bookmark: bool,
    /// Shared with the chunk in flight, which signals when it is dropped.
    written: Arc<Notify>,
    /// What goes out before the next chunk, each on its own: a large object's shared
    /// bytes and the end of its line, and the end bookmark after them.
    pieces: VecDeque<Bytes>,
}

/// An initial chunk handed to the connection: dropping it (written out, or the
/// connection gone) lets the stream encode the next.
struct InFlight {
    chunk: Bytes,
    written: Arc<Notify>,
}

impl AsRef<[u8]> for InFlight {
    fn as_ref(&self) -> &[u8] {
        &self.chunk
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // A permit is kept if the stream is not waiting yet.
        self.written.notify_one();
    }
}

/// The body of a running watch: the initial events, then whatever the cache queues.
struct EventStream {
    initial: Option<Initial>,
    watch: Watch,
    def: &'static ResourceDef,
    /// One timer for the stream's life: re-arming a fresh one per event costs a timer-wheel
    /// insert and removal for every event of every watcher.
    deadline: Pin<Box<Sleep>>,
    /// What each event's object is sent as, when not the object itself (Table,
    /// PartialObjectMetadata).
    view: Option<WatchView>,
    /// Read for the number of open watches, which sets the flush interval.
    cache: Arc<WatchCache>,
    /// When this stream last handed events to the connection.
    last_write: Option<Instant>,
    /// Reset to the next allowed write when events come faster than the flush interval
    /// (one timer for the stream's life, like `deadline`).
    flush_timer: Pin<Box<Sleep>>,
    /// Chaos mode only: the injector and the strikes it sends to open watches.
    strikes: Option<(Arc<Chaos>, StrikeReceiver)>,
    /// The last chunk (a chaos 410, a failed conversion) went out: end the stream.
    ended: bool,
    /// For a custom resource converted by its CRD's webhook: what converting an object
    /// needs ([`crate::conversion`]). Objects are converted before they are encoded.
    convert: Option<Arc<(RestState, Target)>>,
}

/// How a watch stream stops short: a cut connection, as a network fault would leave it.
type Cut = std::io::Error;

impl EventStream {
    async fn next(mut self) -> Option<(Result<Bytes, Cut>, EventStream)> {
        while let Some(initial) = self.initial.as_ref() {
            let written = Arc::clone(&initial.written);
            if !self.sent_out(&written).await {
                // The deadline passed before the client took the last chunk.
                return None;
            }
            let chunk = match self.convert.clone() {
                Some(convert) => self.converted_initial_chunk(&convert).await,
                None => self.initial_chunk(),
            };
            if !chunk.is_empty() {
                return Some((Ok(Bytes::from_owner(InFlight { chunk, written })), self));
            }
            // Objects looked at that the selectors left out: let other tasks run.
            tokio::task::yield_now().await;
        }
        if self.ended {
            return None;
        }
        let first = loop {
            let item = tokio::select! {
                item = self.watch.rx.recv() => item?,
                _ = self.deadline.as_mut() => return None,
                // Only in chaos mode: other streams poll two branches per event, as before.
                strike = struck(&mut self.strikes), if self.strikes.is_some() => match strike {
                    WatchAction::Expire => {
                        self.ended = true;
                        let gone = ApiError::expired("too old resource version: the watch was expired by a chaos fault");
                        let line = event_line("ERROR", &serde_json::to_vec(&gone.to_json()).unwrap_or_default());
                        return Some((Ok(line), self));
                    }
                    WatchAction::Close => {
                        return Some((Err(Cut::new(std::io::ErrorKind::ConnectionAborted, "chaos: watch cut")), self));
                    }
                },
            };
            let line = self.next_line(item).await;
            if !line.is_empty() {
                break line;
            }
        };
        if self.ended {
            return Some((Ok(first), self));
        }
        let interval = flush_interval(self.cache.watcher_count());
        let mut now = Instant::now();
        if let Some(next_write) = self.last_write.map(|t| t + interval).filter(|t| *t > now) {
            self.flush_timer.as_mut().reset(next_write);
            tokio::select! {
                _ = self.flush_timer.as_mut() => {}
                // Unsent events are not lost: the client resumes from the last rv it saw.
                _ = self.deadline.as_mut() => return None,
            }
            now = Instant::now();
        }
        self.last_write = Some(now);
        let Ok(second) = self.watch.rx.try_recv() else {
            // A lone event goes out as its shared encoded line, without a copy.
            return Some((Ok(first), self));
        };
        // Send what is ready together, one line per event.
        let mut buf = BytesMut::new();
        buf.put_slice(&first);
        buf.put_slice(&self.next_line(second).await);
        while buf.len() < CHUNK_BYTES && !self.ended {
            match self.watch.rx.try_recv() {
                Ok(item) => buf.put_slice(&self.next_line(item).await),
                Err(_) => break,
            }
        }
        Some((Ok(buf.freeze()), self))
    }

    /// Waits until no initial chunk is in flight (the count of `written`'s holders says
    /// it); false if the watch's deadline came first.
    async fn sent_out(&mut self, written: &Arc<Notify>) -> bool {
        // `Initial` and the caller hold it; a third holder is a chunk in flight.
        while Arc::strong_count(written) > 2 {
            tokio::select! {
                _ = written.notified() => {}
                _ = self.deadline.as_mut() => return false,
            }
        }
        true
    }

    /// The next chunk of initial events (about [`CHUNK_BYTES`], more by at most one
    /// object; empty when [`INITIAL_SCAN`] objects were looked at and none matched),
    /// then the initial-events-end bookmark; `initial` is None once all are sent.
    fn initial_chunk(&mut self) -> Bytes {
        let Some(initial) = self.initial.as_mut() else { return Bytes::new() };
        if let Some(piece) = initial.pieces.pop_front() {
            if initial.pieces.is_empty() && initial.objects.is_done() {
                self.initial = None;
            }
            return piece;
        }
        let mut chunk = BytesMut::new();
        let mut budget = INITIAL_SCAN;
        while chunk.len() < CHUNK_BYTES {
            let Some(obj) = initial.objects.next_within(&mut budget) else { break };
            match self.view.as_mut() {
                // A large object goes out as the cache's own bytes, after the chunk: no
                // watch copies it.
                None if obj.bytes.len() >= LARGE_OBJECT && serves_as_stored(&obj, self.def) => {
                    chunk.put_slice(ADDED_HEAD);
                    initial.pieces.push_back(obj.bytes.clone());
                    initial.pieces.push_back(Bytes::from_static(b"}\n"));
                    break;
                }
                None => put_added(&mut chunk, &obj, self.def),
                Some(v) => chunk.put_slice(&view_line(v, "ADDED", &obj)),
            }
        }
        if initial.objects.is_done() {
            if initial.end_bookmark {
                let end = bookmark_line(self.def, initial.rv, true);
                if initial.pieces.is_empty() {
                    chunk.put_slice(&end);
                } else {
                    initial.pieces.push_back(end);
                }
                initial.end_bookmark = false;
            }
            if initial.pieces.is_empty() {
                self.initial = None;
            }
        }
        chunk.freeze()
    }

    /// The next chunk of initial events of a watch whose objects convert by webhook: up to
    /// a review's worth ([`crate::conversion::BATCH`]) converted at once, then encoded as
    /// [`EventStream::initial_chunk`] encodes them. A failed conversion is an ERROR event
    /// that ends the stream, as kube-apiserver ends a watch it cannot encode.
    async fn converted_initial_chunk(&mut self, convert: &(RestState, Target)) -> Bytes {
        let Some(initial) = self.initial.as_mut() else { return Bytes::new() };
        let mut objects = Vec::new();
        let mut budget = INITIAL_SCAN;
        while objects.len() < crate::conversion::BATCH {
            match initial.objects.next_within(&mut budget) {
                Some(obj) => objects.push(obj),
                None => break,
            }
        }
        let (done, rv, end_bookmark) = (initial.objects.is_done(), initial.rv, initial.end_bookmark);
        let bytes: Vec<&[u8]> = objects.iter().map(|o| &o.bytes[..]).collect();
        let converted = match crate::conversion::served_many(&convert.0, &convert.1, &bytes).await {
            Ok(c) => c,
            Err(e) => return self.fail(&e),
        };
        let mut chunk = BytesMut::new();
        for (obj, c) in objects.into_iter().zip(converted) {
            let obj = match c {
                Some(bytes) => Obj::new(obj.key.clone(), obj.rv, bytes),
                None => obj,
            };
            match self.view.as_mut() {
                None => put_added(&mut chunk, &obj, self.def),
                Some(v) => chunk.put_slice(&view_line(v, "ADDED", &obj)),
            }
        }
        if done {
            if end_bookmark {
                chunk.put_slice(&bookmark_line(self.def, rv, true));
            }
            self.initial = None;
        }
        chunk.freeze()
    }

    /// Ends the stream after an ERROR event with `e`'s Status.
    fn fail(&mut self, e: &ApiError) -> Bytes {
        self.initial = None;
        self.ended = true;
        event_line("ERROR", &serde_json::to_vec(&e.to_json()).unwrap_or_default())
    }

    /// The line for one queued item ([`EventStream::line`]), its object converted first
    /// when the CRD converts by webhook.
    async fn next_line(&mut self, item: WatchItem) -> Bytes {
        let Some(convert) = self.convert.clone() else { return self.line(item) };
        let item = match item {
            WatchItem::Event(t, event) if !serves_as_stored(&event.object, self.def) => {
                match crate::conversion::served_many(&convert.0, &convert.1, &[&event.object.bytes[..]]).await {
                    Ok(mut c) => match c.pop().flatten() {
                        Some(bytes) => {
                            let obj = Obj::new(event.object.key.clone(), event.object.rv, bytes);
                            WatchItem::Event(t, Event::new(event.rv, event.kind, obj, None))
                        }
                        None => WatchItem::Event(t, event),
                    },
                    Err(e) => return self.fail(&e),
                }
            }
            other => other,
        };
        self.line(item)
    }

    /// The line for one queued item (empty for an object that cannot be served).
    fn line(&mut self, item: WatchItem) -> Bytes {
        if let Some(view) = self.view.as_mut() {
            return match item {
                WatchItem::Event(t, event) => view_line(view, t.as_str(), &event.object),
                WatchItem::Bookmark(rv) => bookmark_line(self.def, rv, false),
            };
        }
        match item {
            WatchItem::Event(t, event) if serves_as_stored(&event.object, self.def) => event.line(t),
            WatchItem::Event(t, event) => match served_bytes(&event.object.bytes, self.def) {
                Ok(bytes) => event_line(t.as_str(), &bytes),
                Err(e) => {
                    tracing::warn!("unservable object {}: {e}", event.object.key);
                    Bytes::new()
                }
            },
            WatchItem::Bookmark(rv) => bookmark_line(self.def, rv, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_coalesce_writes_only_when_many_watches_are_open() {
        assert_eq!(flush_interval(0), Duration::ZERO);
        assert_eq!(flush_interval(1), Duration::ZERO, "a lone watch writes each event at once");
        assert_eq!(flush_interval(49), Duration::ZERO, "under the timer's granularity");
        assert_eq!(flush_interval(100), Duration::from_millis(2));
        assert_eq!(flush_interval(333), Duration::from_micros(6660));
        assert_eq!(flush_interval(10_000), MAX_FLUSH_INTERVAL, "capped");
        assert_eq!(flush_interval(usize::MAX), MAX_FLUSH_INTERVAL);
    }
}
