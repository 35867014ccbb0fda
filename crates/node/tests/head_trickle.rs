//! A request head trickled in small pieces costs the REST port linear work (issue 33,
//! class 10). hyper does not re-parse a partial head on every read: it scans only the
//! bytes that arrived since the last look for the blank line that ends a head, and parses
//! once that is there. So a sender of a large head, byte-slow or fast, costs the server
//! one read per piece plus one parse; a parser that started again on every read would cost
//! the square of the head's length.
//!
//! Judged as `crates/rest/tests/parse_cost.rs` judges parsers: the CPU time of the
//! server's one thread (`CLOCK_THREAD_CPUTIME_ID`: it does not run while the thread waits
//! for a core) for a head of n and of 8n bytes sent in pieces of the same size, the least
//! of several tries. Linear work grows about 8 times, quadratic about 64; the bound is
//! three times linear.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use kuorum_node::http_server::{serve, ConnectionCaps, HttpLimits};
use tokio::sync::{mpsc, oneshot};

/// Bytes of the header value in the smaller head; the larger has eight times as many,
/// 512 KiB, within kube-apiserver's 1 MiB of head.
const SMALL_HEAD: usize = 64 << 10;
/// Bytes in each piece the client writes, with a pause after it so the server reads the
/// pieces one by one.
const PIECE: usize = 512;
const PAUSE: Duration = Duration::from_micros(200);
/// Tries per size; the least CPU time counts.
const TRIES: usize = 3;
/// Linear: 8; the bound allows three times that.
const MAX_RATIO: f64 = 24.0;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The REST port's serving loop on one thread (a current-thread runtime), answering 200
/// on `/x`; its address and a way to ask that thread for its CPU time.
fn server() -> (SocketAddr, mpsc::UnboundedSender<oneshot::Sender<u64>>) {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (cpu_tx, mut cpu_rx) = mpsc::unbounded_channel::<oneshot::Sender<u64>>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let limits = HttpLimits {
                connections: ConnectionCaps { per_source: 0, total: 100, reserved: 10 },
                ..HttpLimits::default()
            };
            let app = Router::new().route("/x", get(|| async { "ok" }));
            tokio::spawn(serve(listener, app, limits, None));
            // Every task of this runtime runs on this thread: its CPU time is the server's.
            while let Some(reply) = cpu_rx.recv().await {
                let _ = reply.send(thread_cpu_ns());
            }
        });
    });
    (addr_rx.recv().unwrap(), cpu_tx)
}

fn server_cpu(cpu: &mpsc::UnboundedSender<oneshot::Sender<u64>>) -> u64 {
    let (tx, rx) = oneshot::channel();
    cpu.send(tx).unwrap();
    rx.blocking_recv().unwrap()
}

/// Sends a GET whose one header value is `value_bytes` long, `PIECE` bytes at a time, and
/// answers the server thread's CPU time for the whole exchange and the response's status.
fn trickle(addr: SocketAddr, cpu: &mpsc::UnboundedSender<oneshot::Sender<u64>>, value_bytes: usize) -> (u64, u16) {
    let mut head = b"GET /x HTTP/1.1\r\nHost: k\r\nX-Pad: ".to_vec();
    head.resize(head.len() + value_bytes, b'a');
    head.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let before = server_cpu(cpu);
    for piece in head.chunks(PIECE) {
        s.write_all(piece).unwrap();
        std::thread::sleep(PAUSE);
    }
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let spent = server_cpu(cpu) - before;
    let text = String::from_utf8_lossy(&reply);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (spent, status)
}

#[test]
fn a_trickled_head_costs_linear_work() {
    let (addr, cpu) = server();
    let least = |bytes: usize| {
        (0..TRIES)
            .map(|_| {
                let (ns, status) = trickle(addr, &cpu, bytes);
                assert_eq!(status, 200, "a {bytes}-byte header within the head limit is served");
                ns
            })
            .min()
            .unwrap()
    };
    let small = least(SMALL_HEAD);
    let large = least(8 * SMALL_HEAD);
    let ratio = large as f64 / small.max(1) as f64;
    eprintln!(
        "server CPU for a head in {PIECE}-byte pieces: {} KiB {:.2} ms, {} KiB {:.2} ms, ratio {ratio:.1}",
        SMALL_HEAD >> 10,
        small as f64 / 1e6,
        8 * SMALL_HEAD >> 10,
        large as f64 / 1e6
    );
    assert!(ratio < MAX_RATIO, "8 times the head cost {ratio:.1} times the CPU (linear: 8, quadratic: 64)");
}
