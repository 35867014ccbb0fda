//! Owns the small HTTPS servers tests stand up beside a cluster, as real webhook and
//! extension API servers are: a self-signed certificate for the names given (its PEM,
//! base64, is the `caBundle` to configure), HTTP/1.1 with keep-alive, and a
//! handler that answers each request. [`HttpsServer::set_down`] makes it drop every
//! connection unanswered, as a server that went away.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use base64::Engine;
use serde_json::Value;

/// One request the server got.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// Header names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

impl Request {
    /// Every value of header `name` (lower case).
    pub fn header_values(&self, name: &str) -> Vec<String> {
        self.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }
}

/// A running server.
pub struct HttpsServer {
    pub port: u16,
    /// The certificate, PEM then base64: a `caBundle`.
    pub ca_bundle: String,
    down: Arc<AtomicBool>,
}

impl HttpsServer {
    /// Starts a server on 127.0.0.1 whose certificate names `names`; `handler` answers
    /// each request with a status and a JSON body.
    pub fn start(names: &[&str], handler: impl Fn(&Request) -> (u16, Value) + Send + Sync + 'static) -> HttpsServer {
        let certified = rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("a self-signed certificate");
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(certified.cert.pem());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![certified.cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into()),
            )
            .expect("a server certificate");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let down = Arc::new(AtomicBool::new(false));
        let handler = Arc::new(handler);
        let is_down = down.clone();
        thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                if is_down.load(Ordering::SeqCst) {
                    continue;
                }
                let _ = sock.set_nodelay(true);
                let (config, handler, is_down) = (config.clone(), handler.clone(), is_down.clone());
                thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                    serve_one(rustls::StreamOwned::new(conn, sock), &*handler, &is_down);
                });
            }
        });
        HttpsServer { port, ca_bundle, down }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// While down, every connection is closed unanswered, the open ones at their next
    /// request.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

/// The exchanges on `stream`, until the client closes it (HTTP/1.1 keep-alive, as real
/// servers keep connections open for kube-apiserver's clients to reuse).
fn serve_one(mut stream: impl Read + Write, handler: &dyn Fn(&Request) -> (u16, Value), down: &AtomicBool) {
    let mut reader = BufReader::new(&mut stream);
    loop {
        let mut line = String::new();
        if !matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            return;
        }
        let mut words = line.split_whitespace();
        let method = words.next().unwrap_or("").to_string();
        let path = words.next().unwrap_or("").split('?').next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                if k == "content-length" {
                    length = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0; length.min(16 << 20)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if down.load(Ordering::SeqCst) {
            return;
        }
        let close = headers.iter().any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        let request = Request { method, path, headers, body: serde_json::from_slice(&body).unwrap_or(Value::Null) };
        let (status, reply) = handler(&request);
        let reply = reply.to_string();
        let stream = reader.get_mut();
        let connection = if close { "close" } else { "keep-alive" };
        // One write, so the answer leaves as one TLS record: written in pieces, Nagle's
        // algorithm would hold the later ones for the client's delayed ACK (40 ms).
        let answer = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{reply}",
            reply.len()
        );
        let _ = stream.write_all(answer.as_bytes());
        if stream.flush().is_err() || close {
            return;
        }
    }
}
