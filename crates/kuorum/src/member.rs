//! `kuorum member ...`: list and change a running cluster's membership through the nodes'
//! `/kuorum/v1/members` endpoints. Changes go to the leader: each `--server` is tried in
//! turn until the leader (or a node that knows no other answer) replies.

use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct MemberArgs {
    #[command(flatten)]
    pub connect: Connect,
    /// Print the answer as JSON rather than a table.
    #[arg(long, short = 'o', value_parser = ["table", "json"], default_value = "table", global = true)]
    pub output: String,
    #[command(subcommand)]
    pub action: MemberAction,
}

#[derive(Subcommand, Debug)]
pub enum MemberAction {
    /// Show the members, their roles, the leader and how far each log matches.
    List,
    /// Add a node as a learner (it receives the log but does not vote) and wait until it
    /// has caught up. Start it first with `kuorum serve --join`.
    Add {
        id: u64,
        /// The new node's peer address (its `--peer-listen`), as the others dial it.
        peer_address: String,
    },
    /// Make a learner a voter.
    Promote { id: u64 },
    /// Remove a voter or a learner from the cluster.
    Remove { id: u64 },
    /// Hand the leadership to another voter.
    TransferLeader { id: u64 },
}

/// How the CLI reaches a cluster's nodes (`kuorum member`, `kuorum snapshot save`).
#[derive(Args, Debug)]
pub struct Connect {
    /// REST URLs of the cluster's nodes, comma-separated (any subset; the leader is found).
    /// Default: every cluster in --kubeconfig, else http://127.0.0.1:6443.
    #[arg(long, value_delimiter = ',', global = true)]
    pub server: Vec<String>,
    /// Take the servers, the CA and the user's credentials (a client certificate or a
    /// token, of a user in system:masters) from this kubeconfig, such as the one
    /// `kuorum up` writes.
    #[arg(long, global = true)]
    pub kubeconfig: Option<std::path::PathBuf>,
}

/// Where to send, and how to authenticate.
pub(crate) struct Target {
    pub servers: Vec<String>,
    pub client: reqwest::blocking::Client,
    pub token: Option<String>,
}

fn b64_field(v: &serde_yaml_ng::Value, key: &str) -> anyhow::Result<Option<Vec<u8>>> {
    use base64::Engine;
    match v.get(key).and_then(|x| x.as_str()) {
        Some(s) => Ok(Some(base64::engine::general_purpose::STANDARD.decode(s.trim()).context(key.to_string())?)),
        None => Ok(None),
    }
}

impl Target {
    /// `method path` to `server`, with the user's token if there is one.
    pub(crate) fn request(
        &self,
        method: reqwest::Method,
        server: &str,
        path: &str,
    ) -> (String, reqwest::blocking::RequestBuilder) {
        let url = format!("{}{}", server.trim_end_matches('/'), path);
        let req = self.client.request(method, &url);
        let req = match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        (url, req)
    }
}

pub(crate) fn target(args: &Connect) -> anyhow::Result<Target> {
    // Adding a learner waits for it to catch up, which can take a while on a big store.
    let mut builder = reqwest::blocking::Client::builder().timeout(Duration::from_secs(600));
    let mut servers = args.server.clone();
    let mut token = None;
    if let Some(path) = &args.kubeconfig {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let kc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).context("parsing the kubeconfig")?;
        let clusters = kc.get("clusters").and_then(|c| c.as_sequence()).cloned().unwrap_or_default();
        for c in &clusters {
            let cluster = c.get("cluster").cloned().unwrap_or_default();
            if args.server.is_empty() {
                if let Some(s) = cluster.get("server").and_then(|s| s.as_str()) {
                    servers.push(s.to_string());
                }
            }
            if let Some(ca) = b64_field(&cluster, "certificate-authority-data")? {
                builder = builder.add_root_certificate(reqwest::Certificate::from_pem(&ca)?);
            }
        }
        let current = kc.get("current-context").and_then(|c| c.as_str()).unwrap_or_default().to_string();
        let user_name = kc
            .get("contexts")
            .and_then(|c| c.as_sequence())
            .and_then(|cs| cs.iter().find(|c| c.get("name").and_then(|n| n.as_str()) == Some(current.as_str())))
            .and_then(|c| c.get("context")?.get("user")?.as_str().map(String::from));
        let user = kc
            .get("users")
            .and_then(|u| u.as_sequence())
            .and_then(|us| us.iter().find(|u| u.get("name").and_then(|n| n.as_str()) == user_name.as_deref()))
            .and_then(|u| u.get("user").cloned())
            .unwrap_or_default();
        if let (Some(cert), Some(key)) =
            (b64_field(&user, "client-certificate-data")?, b64_field(&user, "client-key-data")?)
        {
            let mut pem = cert;
            pem.extend_from_slice(&key);
            builder = builder.identity(reqwest::Identity::from_pem(&pem)?);
        }
        token = user.get("token").and_then(|t| t.as_str()).map(String::from);
    }
    if servers.is_empty() {
        servers.push("http://127.0.0.1:6443".into());
    }
    Ok(Target { servers, client: builder.build()?, token })
}

/// Sends the request to each server until one that is the leader (or can answer a
/// read) replies; a 421 means "not the leader", so the next server is tried.
fn send(args: &MemberArgs, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    let t = target(&args.connect)?;
    let mut last = String::from("no server given");
    for server in &t.servers {
        let (url, mut req) = t.request(method.clone(), server, path);
        if let Some(b) = &body {
            req = req.json(b);
        }
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) => {
                last = format!("{url}: {e}");
                continue;
            }
        };
        let status = resp.status();
        let text = resp.text().with_context(|| format!("reading the answer of {url}"))?;
        if status == reqwest::StatusCode::MISDIRECTED_REQUEST {
            last = format!("{url}: {}", message(&text));
            continue;
        }
        if !status.is_success() {
            bail!("{url}: {status}: {}", message(&text));
        }
        return serde_json::from_str(&text).with_context(|| format!("{url} answered something that is not JSON"));
    }
    bail!("no server could make the change; last: {last}")
}

/// A Status' message, or the raw text.
pub(crate) fn message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| text.trim().to_string())
}

fn print(args: &MemberArgs, v: &Value) -> anyhow::Result<()> {
    if args.output == "json" {
        println!("{}", serde_json::to_string_pretty(v)?);
        return Ok(());
    }
    println!("{:<6} {:<8} {:<7} {:<24} MATCHED", "ID", "ROLE", "LEADER", "PEER ADDRESS");
    for m in v["members"].as_array().into_iter().flatten() {
        let matched = m["matchedIndex"].as_u64().map_or("-".to_string(), |i| i.to_string());
        println!(
            "{:<6} {:<8} {:<7} {:<24} {}",
            m["id"],
            m["role"].as_str().unwrap_or("?"),
            if m["leader"].as_bool() == Some(true) { "*" } else { "" },
            m["peerAddress"].as_str().unwrap_or("?"),
            matched
        );
    }
    Ok(())
}

pub fn run(args: MemberArgs) -> anyhow::Result<()> {
    use reqwest::Method;
    let answer = match &args.action {
        MemberAction::List => {
            // Any node can list; prefer the leader's view (it knows how far logs match).
            let any = send(&args, Method::GET, "/kuorum/v1/members", None)?;
            match any["leader"].as_u64() {
                Some(l) if any["node"].as_u64() != Some(l) => {
                    let t = target(&args.connect)?;
                    let leader_view = t.servers.iter().find_map(|s| {
                        let (_, req) = t.request(Method::GET, s, "/kuorum/v1/members");
                        let v: Value = req.send().ok()?.json().ok()?;
                        (v["node"].as_u64() == Some(l)).then_some(v)
                    });
                    leader_view.unwrap_or(any)
                }
                _ => any,
            }
        }
        MemberAction::Add { id, peer_address } => {
            send(&args, Method::POST, "/kuorum/v1/members", Some(json!({"id": id, "peerAddress": peer_address})))?
        }
        MemberAction::Promote { id } => send(&args, Method::POST, &format!("/kuorum/v1/members/{id}/promote"), None)?,
        MemberAction::Remove { id } => send(&args, Method::DELETE, &format!("/kuorum/v1/members/{id}"), None)?,
        MemberAction::TransferLeader { id } => send(&args, Method::POST, "/kuorum/v1/leader", Some(json!({"id": id})))?,
    };
    print(&args, &answer)
}
