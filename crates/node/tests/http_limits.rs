//! The REST port's connection and head limits (crates/node/src/http_server.rs), attacked
//! with real sockets on loopback against a real single-node kuorum (memory engines, the
//! whole REST router): slowloris heads, idle connections, a source IP over its share, the
//! total with its reserve, many headers, long URIs and large heads.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kuorum_api::seams::{SplitMix64, SystemClock};
use kuorum_node::http_server::{ConnectionCaps, HttpLimits};
use kuorum_node::{start_node, NodeConfig, NodeSeams, RunningNode};
use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

type Node = RunningNode<MemoryObjectEngine>;

/// A one-node cluster serving REST on 127.0.0.1 within `limits`, once it answers /readyz.
async fn node(limits: HttpLimits) -> (Node, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let members = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
    let cfg = NodeConfig { http: limits, ..NodeConfig::new(1, members) };
    let seams = NodeSeams {
        rest_listener: listener,
        peer_incoming: futures::StreamExt::boxed(futures::stream::pending()),
        dialer: Arc::new(kuorum_raft::TcpDialer),
        clock: Arc::new(SystemClock),
        entropy: Arc::new(SplitMix64::new(7)),
        log_engine: Arc::new(MemoryLogEngine::new()),
        object_engine: Arc::new(MemoryObjectEngine::new()),
        apply_tap: None,
    };
    let node = start_node(cfg, seams).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut c = connect("127.0.0.1", addr).await;
        if let Ok(r) = request(&mut c, "GET /readyz HTTP/1.1\r\nHost: k\r\n\r\n").await {
            if r.status == 200 {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the node never became ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (node, addr)
}

fn limits(caps: ConnectionCaps) -> HttpLimits {
    HttpLimits { connections: caps, ..HttpLimits::default() }
}

fn roomy() -> ConnectionCaps {
    ConnectionCaps { per_source: 0, total: 1000, reserved: 10 }
}

/// A connection to `addr` from the loopback address `from` (127.0.0.x).
async fn connect(from: &str, addr: SocketAddr) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(format!("{from}:0").parse().unwrap()).unwrap();
    sock.connect(addr).await.unwrap()
}

struct Reply {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    fn status_json(&self) -> serde_json::Value {
        assert!(self.head.to_ascii_lowercase().contains("content-type: application/json"), "{}", self.head);
        let v: serde_json::Value = serde_json::from_slice(&self.body).expect("a JSON body");
        assert_eq!(v["kind"], "Status", "{v}");
        assert_eq!(v["code"], self.status, "{v}");
        v
    }
}

/// Sends `req` and reads one response (Content-Length bodies only, or up to EOF).
async fn request(c: &mut TcpStream, req: &str) -> std::io::Result<Reply> {
    c.write_all(req.as_bytes()).await?;
    read_reply(c).await
}

async fn read_reply(c: &mut TcpStream) -> std::io::Result<Reply> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut chunk)).await??;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before a response"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status = head[9..12].parse().unwrap();
    let len = head.lines().find_map(|l| {
        l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
    });
    let mut body = buf[head_end..].to_vec();
    match len {
        Some(len) => {
            while body.len() < len {
                let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut chunk)).await??;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        }
        None => {
            c.read_to_end(&mut body).await?;
        }
    }
    Ok(Reply { status, head, body })
}

/// Whether the server closes `c` within `within` (EOF or reset), reading what comes.
async fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, c.read(&mut chunk)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

const READYZ: &str = "GET /readyz HTTP/1.1\r\nHost: k\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_sent_byte_by_byte_is_cut_off_after_the_header_timeout() {
    let (_node, addr) = node(HttpLimits {
        header_read_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(60),
        ..limits(roomy())
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..20 {
        let mut c = connect("127.0.0.2", addr).await;
        c.write_all(b"GET /api HTTP/1.1\r\nHost: k\r\n").await.unwrap();
        slow.push(c);
    }
    let started = Instant::now();
    // Trickle one byte per connection every 100 ms: the head never completes.
    let mut cut = vec![false; slow.len()];
    while started.elapsed() < Duration::from_secs(4) && cut.iter().any(|c| !c) {
        for (c, done) in slow.iter_mut().zip(cut.iter_mut()) {
            if !*done && (c.write_all(b"X").await.is_err() || closed_within(c, Duration::from_millis(5)).await) {
                *done = true;
                assert!(started.elapsed() >= Duration::from_millis(800), "cut before the timeout");
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(cut.iter().all(|c| *c), "slowloris connections still open after 4 s with a 1 s header timeout");
    // Meanwhile and after, a client that sends its head is served.
    let mut c = connect("127.0.0.1", addr).await;
    assert_eq!(request(&mut c, READYZ).await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_and_a_busy_one_is_not() {
    let (_node, addr) = node(HttpLimits {
        header_read_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(1),
        ..limits(roomy())
    })
    .await;
    // Idle from the start.
    let mut silent = connect("127.0.0.1", addr).await;
    // Idle after one request.
    let mut kept = connect("127.0.0.1", addr).await;
    assert_eq!(request(&mut kept, READYZ).await.unwrap().status, 200);
    // A watch is a request in flight the whole time.
    let mut watch = connect("127.0.0.1", addr).await;
    watch.write_all(b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: k\r\n\r\n").await.unwrap();
    let started = Instant::now();
    assert!(closed_within(&mut silent, Duration::from_secs(4)).await, "a silent connection outlived the idle timeout");
    assert!(closed_within(&mut kept, Duration::from_secs(4)).await, "an idle keep-alive connection stayed open");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(!closed_within(&mut watch, Duration::from_secs(2)).await, "a watch was cut as idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_source_over_its_share_is_refused_while_another_is_served() {
    let (_node, addr) = node(limits(ConnectionCaps { per_source: 8, total: 1000, reserved: 10 })).await;
    let mut attacker = Vec::new();
    for _ in 0..8 {
        let mut c = connect("127.0.0.2", addr).await;
        // A round trip: the server has placed this connection before the next comes.
        assert_eq!(request(&mut c, READYZ).await.unwrap().status, 200);
        attacker.push(c);
    }
    for _ in 0..20 {
        let mut c = connect("127.0.0.2", addr).await;
        let _ = c.write_all(READYZ.as_bytes()).await;
        assert!(closed_within(&mut c, Duration::from_secs(5)).await, "a ninth connection from one source was kept");
    }
    // Another source is served, several times over.
    for _ in 0..10 {
        let mut victim = connect("127.0.0.1", addr).await;
        assert_eq!(request(&mut victim, READYZ).await.unwrap().status, 200);
    }
    // A place freed is a place again.
    drop(attacker.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = connect("127.0.0.2", addr).await;
    assert_eq!(request(&mut c, READYZ).await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_keeps_a_reserve_anonymous_clients_reach_only_for_health() {
    // 8 slots, 4 reserved: 4 anonymous, 1 more anonymous for health checks only.
    let (_node, addr) = node(limits(ConnectionCaps { per_source: 0, total: 8, reserved: 4 })).await;
    // The readiness loop's connections are closed by the client; let the server see it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut held = Vec::new();
    for i in 0..4 {
        let mut c = connect("127.0.0.2", addr).await;
        let r = request(&mut c, "GET /api HTTP/1.1\r\nHost: k\r\n\r\n").await.unwrap();
        assert_eq!(r.status, 200, "anonymous connection {i}");
        held.push(c);
    }
    // The fifth anonymous connection lands in the health slot: anything else is 429...
    let mut c = connect("127.0.0.2", addr).await;
    let r = request(&mut c, "GET /api HTTP/1.1\r\nHost: k\r\n\r\n").await.unwrap();
    assert_eq!(r.status, 429, "{}", r.head);
    let v = r.status_json();
    assert_eq!(v["reason"], "TooManyRequests");
    assert!(v["message"].as_str().unwrap().contains("/readyz"), "{v}");
    assert!(closed_within(&mut c, Duration::from_secs(2)).await, "the health slot's connection serves one request");
    // The server frees the slot just after it closes the socket.
    tokio::time::sleep(Duration::from_millis(100)).await;
    // ...and a probe gets its answer, then the slot back.
    for _ in 0..3 {
        let mut probe = connect("127.0.0.1", addr).await;
        let r = request(&mut probe, READYZ).await.unwrap();
        assert_eq!(r.status, 200);
        assert!(r.head.to_ascii_lowercase().contains("connection: close"), "{}", r.head);
        assert!(closed_within(&mut probe, Duration::from_secs(2)).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // With the health slot taken too, the next anonymous connection is closed unanswered.
    let mut probe = connect("127.0.0.1", addr).await;
    probe.write_all(b"GET /readyz HTTP/1.1\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = connect("127.0.0.1", addr).await;
    let _ = refused.write_all(READYZ.as_bytes()).await;
    assert!(closed_within(&mut refused, Duration::from_secs(5)).await);
    // The held ones still work.
    for c in &mut held {
        assert_eq!(request(c, READYZ).await.unwrap().status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_are_answered_as_kube_apiserver_would_with_a_status_past_the_limits() {
    let (_node, addr) = node(limits(roomy())).await;

    // 150 headers (hyper alone allows 100).
    let mut req = String::from("GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: k\r\n");
    for i in 0..150 {
        req.push_str(&format!("X-Extra-{i}: value-{i}\r\n"));
    }
    req.push_str("\r\n");
    let mut c = connect("127.0.0.1", addr).await;
    assert_eq!(request(&mut c, &req).await.unwrap().status, 200);

    // 900 KiB of headers is within kube-apiserver's 1 MiB (hyper alone allows ~400 KiB).
    let big = "v".repeat(9 * 1024);
    let head = |n: usize| {
        let mut req = String::from("GET /api HTTP/1.1\r\nHost: k\r\n");
        for i in 0..n {
            req.push_str(&format!("X-Big-{i}: {big}\r\n"));
        }
        req.push_str("\r\n");
        req
    };
    let mut c = connect("127.0.0.1", addr).await;
    assert_eq!(request(&mut c, &head(100)).await.unwrap().status, 200);

    // Past 1 MiB: 431 with a Status.
    let mut c = connect("127.0.0.1", addr).await;
    let r = request(&mut c, &head(115)).await.unwrap();
    assert_eq!(r.status, 431, "{}", r.head);
    let v = r.status_json();
    assert!(v["message"].as_str().unwrap().contains("1048576"), "{v}");

    // A URI past 32 KiB: 414 with a Status; just under it is served (404: no such path).
    let mut c = connect("127.0.0.1", addr).await;
    let long = format!(
        "GET /api/v1/namespaces/default/configmaps?labelSelector=a%3D{} HTTP/1.1\r\nHost: k\r\n\r\n",
        "b".repeat(40_000)
    );
    let r = request(&mut c, &long).await.unwrap();
    assert_eq!(r.status, 414, "{}", r.head);
    r.status_json();
    let mut c = connect("127.0.0.1", addr).await;
    let fits = format!("GET /{} HTTP/1.1\r\nHost: k\r\n\r\n", "b".repeat(32_000));
    assert_eq!(request(&mut c, &fits).await.unwrap().status, 404);
}

/// An h2 connection (prior knowledge, as client-go speaks it over TLS) to `addr`.
async fn h2(
    addr: SocketAddr,
) -> (hyper::client::conn::http2::SendRequest<String>, tokio::task::JoinHandle<Result<(), hyper::Error>>) {
    let io = hyper_util::rt::TokioIo::new(connect("127.0.0.1", addr).await);
    let (send, conn) = hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io).await.unwrap();
    (send, tokio::spawn(conn))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_connections_get_the_same_head_limits_and_are_closed_when_idle() {
    let (_node, addr) = node(HttpLimits { idle_timeout: Duration::from_secs(1), ..limits(roomy()) }).await;
    let (mut send, conn) = h2(addr).await;
    let mut req = hyper::Request::get(format!("http://{addr}/api/v1/namespaces/default/configmaps"));
    for i in 0..150 {
        req = req.header(format!("x-extra-{i}"), format!("value-{i}"));
    }
    let resp = send.send_request(req.body(String::new()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    drop(resp);
    let big = "v".repeat(9 * 1024);
    let mut req = hyper::Request::get(format!("http://{addr}/api"));
    for i in 0..115 {
        req = req.header(format!("x-big-{i}"), big.as_str());
    }
    let resp = send.send_request(req.body(String::new()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), 431);
    drop(resp);
    // Idle from here: the server says GOAWAY and closes within the timeout and its grace.
    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(8), conn).await;
    assert!(ended.is_ok(), "an idle h2 connection stayed open");
    assert!(started.elapsed() >= Duration::from_millis(500), "closed before the idle timeout");
}
