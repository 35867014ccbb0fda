//! `kuorum member ...`: list and change a running cluster's membership through the nodes'
//! `/kuorum/v1/members` endpoints. Changes go to the leader: each `--server` is tried in
//! turn until the leader (or a node that knows no other answer) replies.

use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct MemberArgs {
    /// REST URLs of the cluster's nodes, comma-separated (any subset; the leader is found).
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:6443", global = true)]
    pub server: Vec<String>,
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

/// Sends the request to each server until one that is the leader (or can answer a
/// read) replies; a 421 means "not the leader", so the next server is tried.
fn send(args: &MemberArgs, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    // Adding a learner waits for it to catch up, which can take a while on a big store.
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(600)).build()?;
    let mut last = String::from("no --server given");
    for server in &args.server {
        let url = format!("{}{}", server.trim_end_matches('/'), path);
        let mut req = client.request(method.clone(), &url);
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
fn message(text: &str) -> String {
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
                    let leader_view = args.server.iter().find_map(|s| {
                        let v: Value = reqwest::blocking::get(format!("{}/kuorum/v1/members", s.trim_end_matches('/')))
                            .ok()?
                            .json()
                            .ok()?;
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
