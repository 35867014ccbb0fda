//! `kuorum chaos ...`: sets, shows and clears the faults of nodes started with
//! `--enable-chaos`, over their `/kuorum/v1/chaos` endpoint. Each command goes to every
//! server given (`--server`, or the kubeconfig's), since faults are per node; a node
//! without chaos mode answers 404, and the command fails naming it.
//!
//! ```text
//! kuorum chaos set --error-rate 0.1 --error-code 429 --server http://127.0.0.1:6443
//! kuorum chaos set --latency-ms 200 --latency-rate 0.5
//! kuorum chaos set --pause-apply --server http://127.0.0.1:6444
//! kuorum chaos watches expire --fraction 0.5
//! kuorum chaos watches close
//! kuorum chaos compact
//! kuorum chaos show
//! kuorum chaos clear
//! ```

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{json, Value};

use crate::member::{message, target, Connect};

#[derive(Args, Debug)]
pub struct ChaosArgs {
    #[command(subcommand)]
    pub action: ChaosAction,
    #[command(flatten)]
    pub connect: Connect,
}

#[derive(Subcommand, Debug)]
pub enum ChaosAction {
    /// Replace each node's standing faults (what is not given is off).
    Set {
        /// Fraction (0 to 1) of API requests answered with --error-code.
        #[arg(long, default_value_t = 0.0)]
        error_rate: f64,
        /// 429 (with Retry-After), 500, 503 or 504.
        #[arg(long, default_value_t = 429)]
        error_code: u16,
        /// Serve the request, then answer the error instead of its result.
        #[arg(long)]
        error_after_serving: bool,
        /// Delay added before a request is served.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Fraction (0 to 1) of API requests delayed.
        #[arg(long, default_value_t = 1.0)]
        latency_rate: f64,
        /// Stop applying committed entries: the node's Any reads go stale.
        #[arg(long)]
        pause_apply: bool,
    },
    /// End a fraction of each node's open watches now.
    Watches {
        action: StrikeAction,
        /// Fraction (0 to 1) of the open watches hit.
        #[arg(long, default_value_t = 1.0)]
        fraction: f64,
    },
    /// Compact the cluster's history up to now: watches and reads from before get 410.
    Compact,
    /// Print each node's standing faults.
    Show,
    /// Remove each node's standing faults.
    Clear,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum StrikeAction {
    /// An ERROR event with a 410 Expired Status, then the end: the client must relist.
    Expire,
    /// Cut the stream without a final event: the client must resume.
    Close,
}

pub fn run(args: ChaosArgs) -> anyhow::Result<()> {
    let (method, path, body) = match args.action {
        ChaosAction::Set { error_rate, error_code, error_after_serving, latency_ms, latency_rate, pause_apply } => (
            Method::PUT,
            "/kuorum/v1/chaos",
            Some(json!({
                "errorRate": error_rate,
                "errorCode": error_code,
                "errorAfterServing": error_after_serving,
                "latencyMs": latency_ms,
                "latencyRate": latency_rate,
                "applyPaused": pause_apply,
            })),
        ),
        ChaosAction::Watches { action, fraction } => {
            let action = match action {
                StrikeAction::Expire => "Expire",
                StrikeAction::Close => "Close",
            };
            (Method::POST, "/kuorum/v1/chaos/watches", Some(json!({"action": action, "fraction": fraction})))
        }
        ChaosAction::Compact => (Method::POST, "/kuorum/v1/chaos/compact", None),
        ChaosAction::Show => (Method::GET, "/kuorum/v1/chaos", None),
        ChaosAction::Clear => (Method::DELETE, "/kuorum/v1/chaos", None),
    };
    let t = target(&args.connect)?;
    let mut failed = Vec::new();
    for server in &t.servers {
        let (url, mut req) = t.request(method.clone(), server, path);
        if let Some(b) = &body {
            req = req.json(b);
        }
        match req.send() {
            Ok(resp) if resp.status().is_success() => {
                let v: Value = resp.json().unwrap_or(Value::Null);
                println!("{server}: {}", serde_json::to_string(&v)?);
            }
            Ok(resp) if resp.status() == reqwest::StatusCode::NOT_FOUND => {
                failed.push(format!("{url}: 404: the node was not started with --enable-chaos"));
            }
            Ok(resp) => {
                let status = resp.status();
                failed.push(format!("{url}: {status}: {}", message(&resp.text().unwrap_or_default())));
            }
            Err(e) => failed.push(format!("{url}: {e}")),
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("\n"));
    }
    Ok(())
}
