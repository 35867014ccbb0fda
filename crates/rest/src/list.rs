//! LIST of a collection, per the list table ([`crate::consistency`]): a page cut from one
//! snapshot, and a continue token that cuts the next page from the same snapshot.
//!
//! - Most recent / Any / Not older than: the watch cache, once fresh enough; the list's
//!   `metadata.resourceVersion` is the cache's rv at the moment the page was cut.
//! - Exact N and continue tokens: the snapshot at N. While nothing has been applied since
//!   N the cache *is* that snapshot and serves it; otherwise [`crate::history`] reads
//!   the page from the object store's history (selectors applied while reading until
//!   `limit` items match). Below the history (compaction): 410 Expired (for a token, with
//!   a fresh token that continues at the newest state in the Status's
//!   `metadata.continue`, as kube-apiserver does).
//!
//! `metadata.remainingItemCount` is set when a page is full, more objects follow, and the
//! list has no selectors: counted by the first page, carried by the token to the next
//! ([`crate::token`]), so that a paged list costs linear time in all. Bodies are
//! assembled from the stored bytes of each object (which carry kind and apiVersion)
//! without re-encoding them; or, as `Accept`
//! negotiated, the page is a Table or a PartialObjectMetadataList with the same metadata.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use kuorum_api::selector::{FieldSelector, LabelSelector};
use kuorum_api::{ApiError, ResourceDef};
use kuorum_store::keys::collection_prefix;
use kuorum_watch::{Obj, WatchFilter};

use crate::consistency::{wait_for_index, wait_fresh, Freshness, ListOptions, ListPlan};
use crate::conversion;
use crate::history;
use crate::negotiate::{json_response, json_response_as, negotiate_output, Output};
use crate::object::{has_type_meta, served_bytes};
use crate::query::Query;
use crate::table::{self, ListMeta, TableView};
use crate::target::{Ctx, Target};
use crate::token;
use crate::RestState;

/// kube-apiserver's message for a continue token whose snapshot was compacted.
pub(crate) const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list \
     result. You can start a new list without the continue parameter, or use the continue token in this response to \
     retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - \
     objects that were created, modified, or deleted between the time the first chunk was returned and now may show \
     up in the list.";

/// The collection a request names and the selectors it gives (400 on bad selectors).
pub(crate) fn filter_of(q: &Query, t: &Target) -> Result<WatchFilter, ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""), t.selectable_fields())
        .map_err(ApiError::bad_request)?
        .reading(|label| t.strategy().and_then(|s| s.field_path(label)));
    let storage = t.storage_def();
    let prefix = collection_prefix(storage.group, storage.plural, t.namespace.as_deref());
    Ok(WatchFilter { prefix, labels, fields })
}

/// One listed object's stored bytes.
pub(crate) enum Item {
    /// The watch cache's own entry. Holding it costs one count on the entry, whose line
    /// the copy into the response reads anyway; a clone of its `Bytes` would touch the
    /// bytes' shared header too, a cache miss of its own per object when it is taken and
    /// another when it is dropped (15% of a node's CPU in a list of 10,000).
    Cached(Arc<Obj>),
    /// Bytes read from the history, or re-encoded.
    Read(Bytes),
}

impl AsRef<[u8]> for Item {
    fn as_ref(&self) -> &[u8] {
        match self {
            Item::Cached(o) => &o.bytes,
            Item::Read(b) => b,
        }
    }
}

/// One page of a list.
struct Page {
    /// The resourceVersion of the snapshot it was cut from.
    rv: u64,
    items: Vec<Item>,
    /// The key of the last item.
    last_key: Option<String>,
    /// Whether objects (matching or not) follow the last item.
    more: bool,
    /// How many objects follow, when known and worth telling (no selectors).
    remaining: Option<usize>,
}

pub(crate) async fn list(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    let output = negotiate_output(&ctx.headers)?;
    let filter = filter_of(&ctx.query, t)?;
    let opts = ListOptions::parse(&ctx.query)?;
    let plan = opts.list_plan()?;
    let limit = opts.limit;
    let page = match plan {
        ListPlan::Cache(f) => {
            wait_fresh(st, f).await?;
            cache_page(st, &filter, None, limit)
        }
        ListPlan::Exact(n) => {
            wait_for_index(st, n).await?;
            exact_page(st, &filter, n, None, limit, None)?
        }
        ListPlan::Continue(raw) => {
            let tok = token::decode(&raw, &filter.prefix)?;
            let start = tok.start_after();
            if tok.rv < 0 {
                // Continue at the newest state (a token handed out with a 410).
                wait_fresh(st, Freshness::MostRecent).await?;
                cache_page(st, &filter, Some(&start), limit)
            } else {
                let rv = tok.rv as u64;
                wait_for_index(st, rv).await?;
                match exact_page(st, &filter, rv, Some(&start), limit, tok.remaining) {
                    Err(e) if e.code == 410 => return Ok(continue_expired(&filter.prefix, &tok.from_key)),
                    other => other?,
                }
            }
        }
    };
    let page = converted_page(st, t, page).await?;
    let body = match output {
        Output::Json => {
            let body = axum::body::Body::new(encode_list(t.def, &filter.prefix, page)?);
            return Ok(json_response(StatusCode::OK, body));
        }
        Output::Table(version) => {
            let view = TableView::for_request(t, version, &ctx.query)?;
            view.list(&page_meta(&filter.prefix, &page), &page.items, st.clock.now_unix_seconds())?
        }
        Output::PartialObjectMetadataList(version) => {
            table::partial_list(version, &page_meta(&filter.prefix, &page), &page.items)?
        }
        Output::PartialObjectMetadata(_) => return Err(table::partial_of_list(t.def)),
    };
    Ok(json_response_as(StatusCode::OK, output.content_type(), body))
}

/// A page with the objects stored at another version converted by the CRD's conversion
/// webhook ([`conversion::served_many`]); as it is for every other resource.
async fn converted_page(st: &RestState, t: &Target, mut page: Page) -> Result<Page, ApiError> {
    if !conversion::by_webhook(t) {
        return Ok(page);
    }
    let bytes: Vec<&[u8]> = page.items.iter().map(AsRef::as_ref).collect();
    let converted = conversion::served_many(st, t, &bytes).await?;
    page.items = page.items.into_iter().zip(converted).map(|(item, c)| c.map_or(item, Item::Read)).collect();
    Ok(page)
}

/// A page of the watch cache as it is now.
fn cache_page(st: &RestState, filter: &WatchFilter, start_after: Option<&str>, limit: Option<usize>) -> Page {
    let cl = st.cache.page(filter, start_after, limit.unwrap_or(usize::MAX), filter.selects_all());
    page_of_cache(cl)
}

fn page_of_cache(cl: kuorum_watch::CacheList) -> Page {
    Page {
        rv: cl.rv,
        last_key: cl.items.last().map(|o| o.key.clone()),
        items: cl.items.into_iter().map(Item::Cached).collect(),
        more: cl.more,
        remaining: cl.remaining.filter(|_| cl.more),
    }
}

/// A page of the snapshot at exactly `rv` (410 Expired if the history no longer has it).
/// `known`: how many objects of the snapshot follow `start_after`, from the token; the
/// page then counts nothing and tells that count less its items ([`token`]).
fn exact_page(
    st: &RestState,
    filter: &WatchFilter,
    rv: u64,
    start_after: Option<&str>,
    limit: Option<usize>,
    known: Option<usize>,
) -> Result<Page, ApiError> {
    let known = known.filter(|_| filter.selects_all());
    let count = filter.selects_all() && known.is_none();
    let mut page = exact_page_counted(st, filter, rv, start_after, limit, count)?;
    if let Some(k) = known.filter(|_| page.more) {
        page.remaining = Some(k.saturating_sub(page.items.len()));
    }
    Ok(page)
}

fn exact_page_counted(
    st: &RestState,
    filter: &WatchFilter,
    rv: u64,
    start_after: Option<&str>,
    limit: Option<usize>,
    count: bool,
) -> Result<Page, ApiError> {
    // Nothing applied since rv: the cache is the snapshot.
    if st.cache.rv() == rv {
        let cl = st.cache.page(filter, start_after, limit.unwrap_or(usize::MAX), count);
        if cl.rv == rv {
            return Ok(page_of_cache(cl));
        }
    }
    let p = history::page_at(st, filter, rv, start_after, limit, count)?;
    let items = p.items.into_iter().map(Item::Read).collect();
    Ok(Page { rv, items, last_key: p.last_key, more: p.more, remaining: p.remaining })
}

/// 410 Expired for a continue token whose snapshot is gone, with a token that continues
/// from the same key at the newest state in `metadata.continue`.
fn continue_expired(prefix: &str, from_key: &str) -> Response {
    let mut status = ApiError::expired(CONTINUE_EXPIRED).to_json();
    status["metadata"] = serde_json::json!({"continue": token::encode_from(prefix, from_key, -1)});
    json_response(StatusCode::GONE, serde_json::to_vec(&status).unwrap_or_default())
}

/// Whether a cached object's bytes serve as stored for `def` ([`has_type_meta`]),
/// remembered on the object ([`Obj::served_as`]), so that a list reads the object's entry
/// but not the head of its bytes before the response starts.
pub(crate) fn serves_as_stored(obj: &Obj, def: &'static ResourceDef) -> bool {
    let tag = std::ptr::from_ref(def) as usize;
    if obj.served_as(tag) {
        return true;
    }
    let yes = has_type_meta(&obj.bytes, def);
    if yes {
        obj.set_served_as(tag);
    }
    yes
}

/// A listed object as served ([`served_bytes`]).
fn served_item(item: Item, def: &'static ResourceDef) -> Result<Item, ApiError> {
    Ok(match item {
        Item::Cached(o) if serves_as_stored(&o, def) => Item::Cached(o),
        Item::Cached(o) => Item::Read(served_bytes(&o.bytes, def)?),
        Item::Read(b) => Item::Read(served_bytes(&b, def)?),
    })
}

/// A page's list metadata: its resourceVersion and, when more objects follow, the
/// continue token and (without selectors) how many remain.
fn page_meta(prefix: &str, page: &Page) -> ListMeta {
    let mut meta = ListMeta { resource_version: page.rv.to_string(), ..Default::default() };
    if page.more {
        if let Some(last) = &page.last_key {
            meta.continue_token = Some(token::encode(prefix, last, page.rv as i64, page.remaining));
            meta.remaining = page.remaining;
        }
    }
    meta
}

/// `{"kind":"XList","apiVersion":..,"metadata":{..},"items":[..]}` from the items' bytes,
/// as a body that is encoded while it is sent ([`ListBody`]).
fn encode_list(def: &'static ResourceDef, prefix: &str, page: Page) -> Result<ListBody, ApiError> {
    let lm = page_meta(prefix, &page);
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), lm.resource_version.into());
    if let Some(c) = lm.continue_token {
        meta.insert("continue".into(), c.into());
        if let Some(r) = lm.remaining {
            meta.insert("remainingItemCount".into(), r.into());
        }
    }
    let head = serde_json::json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": meta});
    let mut head = serde_json::to_vec(&head).unwrap_or_default();
    // The head without its closing brace, then the items.
    head.pop();
    head.extend_from_slice(b",\"items\":[");
    // Items stored without the type meta are re-encoded now, so that an error is a
    // Status before anything is sent and the body's length is known.
    let items = page.items.into_iter().map(|item| served_item(item, def)).collect::<Result<Vec<_>, _>>()?;
    Ok(ListBody::new(Bytes::from(head), items))
}

/// A list response body, copied into [`LIST_CHUNK_BYTES`] chunks as the connection takes
/// them: the cached objects are never gathered into one buffer the size of the response
/// (24 MB for 10,000 objects of 2 KiB), and the first bytes leave before the last are
/// copied. Its exact length is known up front, so it is sent with a Content-Length and
/// the compression layer still gzips it for clients that ask.
pub(crate) struct ListBody {
    head: Option<Bytes>,
    items: std::vec::IntoIter<Item>,
    started: bool,
    ended: bool,
    /// Bytes not yet handed out (the head, items, commas and the closing `]}`).
    remaining: u64,
    /// Chunk buffers, each taken back once the connection has written and dropped every
    /// chunk cut from it ([`BytesMut::try_reclaim`]). The connection holds one or two
    /// chunks at a time, so a list reuses two or three buffers that stay in the CPU's
    /// cache, instead of filling fresh memory for every chunk (page faults and zeroing
    /// in the kernel, then cache misses on each copy).
    buffers: Vec<BytesMut>,
}

const LIST_CHUNK_BYTES: usize = 256 * 1024;
/// At most this many chunk buffers per list body.
const LIST_CHUNK_BUFFERS: usize = 4;

impl ListBody {
    fn new(head: Bytes, items: Vec<Item>) -> Self {
        let commas = items.len().saturating_sub(1);
        let len = head.len() + items.iter().map(|i| i.as_ref().len()).sum::<usize>() + commas + 2;
        ListBody {
            head: Some(head),
            items: items.into_iter(),
            started: false,
            ended: false,
            remaining: len as u64,
            buffers: Vec::new(),
        }
    }

    /// An empty buffer with room for a chunk: a reclaimed one, or a new one.
    fn buffer(&mut self) -> BytesMut {
        let want = LIST_CHUNK_BYTES.min(self.remaining as usize);
        if let Some(i) = self.buffers.iter_mut().position(|b| b.try_reclaim(want)) {
            return self.buffers.swap_remove(i);
        }
        if self.buffers.len() >= LIST_CHUNK_BUFFERS {
            self.buffers.remove(0);
        }
        BytesMut::with_capacity(want)
    }

    fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(head) = self.head.take() {
            return Some(head);
        }
        let mut buf = self.buffer();
        while buf.len() < LIST_CHUNK_BYTES {
            match self.items.next() {
                Some(item) => {
                    if self.started {
                        buf.put_u8(b',');
                    }
                    self.started = true;
                    buf.put_slice(item.as_ref());
                }
                None if !self.ended => {
                    buf.put_slice(b"]}");
                    self.ended = true;
                    break;
                }
                None => break,
            }
        }
        if buf.is_empty() {
            return None;
        }
        let chunk = buf.split().freeze();
        self.buffers.push(buf);
        Some(chunk)
    }
}

impl http_body::Body for ListBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let chunk = self.next_chunk();
        if let Some(c) = &chunk {
            self.remaining -= c.len() as u64;
        }
        std::task::Poll::Ready(chunk.map(|c| Ok(http_body::Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(items: &[Bytes]) -> Vec<Item> {
        items.iter().cloned().map(Item::Read).collect()
    }

    async fn collect(body: ListBody) -> (u64, Vec<u8>) {
        use http_body::Body as _;
        use http_body_util::BodyExt;
        let exact = body.size_hint().exact().expect("a list's length is known up front");
        (exact, body.collect().await.unwrap().to_bytes().to_vec())
    }

    #[tokio::test]
    async fn a_list_body_is_the_whole_list_in_chunks_of_known_length() {
        let head = Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":["#);
        for n in [0usize, 1, 2, 1000] {
            // 1000 items of 600 bytes cross several chunk boundaries.
            let items: Vec<Bytes> =
                (0..n).map(|i| Bytes::from(format!(r#"{{"i":{i},"pad":"{}"}}"#, "x".repeat(580)))).collect();
            let (exact, bytes) = collect(ListBody::new(head.clone(), read(&items))).await;
            assert_eq!(exact as usize, bytes.len(), "{n} items: the Content-Length is the body's length");
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("one JSON document");
            let got = v["items"].as_array().unwrap();
            assert_eq!(got.len(), n);
            for (i, item) in got.iter().enumerate() {
                assert_eq!(item["i"], i, "items in order, none lost or repeated");
            }
        }
        let many = ListBody::new(head.clone(), read(&vec![Bytes::from(vec![b'1'; 100_000]); 30]));
        let mut many = std::pin::pin!(many);
        let mut frames = 0;
        while let Some(f) = std::future::poll_fn(|cx| http_body::Body::poll_frame(many.as_mut(), cx)).await {
            assert!(f.unwrap().into_data().unwrap().len() <= LIST_CHUNK_BYTES + 100_001);
            frames += 1;
        }
        assert!(frames > 2, "sent in pieces, not as one buffer");
        assert!(http_body::Body::is_end_stream(&*many));
    }

    #[test]
    fn a_chunk_buffer_is_reused_once_its_chunk_is_dropped() {
        let head = Bytes::from_static(br#"{"items":["#);
        let items = vec![Bytes::from(vec![b'1'; 1000]); 2000];
        let mut body = std::pin::pin!(ListBody::new(head, read(&items)));
        let mut next = || {
            let f =
                futures::executor::block_on(std::future::poll_fn(|cx| http_body::Body::poll_frame(body.as_mut(), cx)));
            f.map(|f| f.unwrap().into_data().unwrap())
        };
        let _head = next().unwrap();
        let first = next().unwrap();
        let first_at = first.as_ptr();
        let held = next().unwrap();
        assert_ne!(held.as_ptr(), first_at, "a chunk still held is never written over");
        drop(first);
        let third = next().unwrap();
        assert_eq!(third.as_ptr(), first_at, "the dropped chunk's buffer is filled again");
        assert!(third.iter().all(|&b| b == b'1' || b == b','));
        assert!(held.iter().all(|&b| b == b'1' || b == b','), "the held chunk is intact");
    }
}
