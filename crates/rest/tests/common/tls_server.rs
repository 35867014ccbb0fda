//! An HTTPS server for the tests that stand up a webhook or an extension API server: a
//! self-signed certificate for one name (its PEM, base64, is the `caBundle`), serving an
//! axum router. Aborting the returned task stops it and every connection it holds.

use std::sync::Arc;

use base64::Engine;

/// Serves `router` on 127.0.0.1 with a certificate for `name`; answers the port, the
/// `caBundle`, and the serving task.
pub async fn serve(router: axum::Router, name: &str) -> (u16, String, tokio::task::JoinHandle<()>) {
    let certified = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    let ca = base64::engine::general_purpose::STANDARD.encode(certified.cert.pem());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![certified.cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        // Connections live in the task's set: aborting the task drops them too.
        let mut conns = tokio::task::JoinSet::new();
        loop {
            let Ok((sock, _)) = listener.accept().await else { return };
            let (acceptor, router) = (acceptor.clone(), router.clone());
            conns.spawn(async move {
                let Ok(tls) = acceptor.accept(sock).await else { return };
                let service = hyper_util::service::TowerToHyperService::new(router);
                let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, ca, task)
}
