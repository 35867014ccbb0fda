//! `kuorum certs sign-csr`: what kube-controller-manager's csrsigning controller does for
//! the client signers, on request. Every CertificateSigningRequest that is approved, not
//! denied or failed, and not yet issued, whose `signerName` is
//! `kubernetes.io/kube-apiserver-client-kubelet` or `kubernetes.io/kube-apiserver-client`,
//! is signed by the cluster's CA (the one in `--dir`) and its certificate written to the
//! request's `status.certificate`, so a kubelet's TLS bootstrap (or a user's
//! `kubectl certificate approve`) gets a client certificate every node accepts.
//!
//! The signers' rules, as kube's: a kubelet's request must name `system:node:<name>` in
//! the organization `system:nodes` and nothing else (no SANs); every client certificate
//! asks for `client auth` among the key usages kube allows, and none may be for
//! `system:masters`. A request that breaks them is left unsigned, and said so. The
//! certificate is valid for `spec.expirationSeconds` (at least 10 minutes) or a year.

use std::path::PathBuf;

use anyhow::{bail, Context};
use base64::Engine;
use clap::Args;
use rcgen::{CertificateSigningRequestParams, DnType, DnValue, ExtendedKeyUsagePurpose, KeyUsagePurpose};
use serde_json::Value;

use crate::member::{message, target, Connect};
use crate::pki::{Ca, MASTERS};

const KUBELET_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// kube-controller-manager's `--cluster-signing-duration` default.
const DEFAULT_SECONDS: i64 = 365 * 24 * 3600;
/// The shortest `expirationSeconds` kube honours.
const MIN_SECONDS: i64 = 600;

#[derive(Args, Debug)]
pub struct SignArgs {
    /// Where the CA is (`ca.crt`, `ca.key`).
    #[arg(long)]
    pub dir: PathBuf,
    #[command(flatten)]
    pub connect: Connect,
    /// Sign only this request (default: every approved, unsigned one).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(args: SignArgs) -> anyhow::Result<()> {
    let ca = Ca::load(&args.dir)?;
    let t = target(&args.connect)?;
    let server = t.servers.first().context("no server")?.clone();
    let (url, req) = t.request(reqwest::Method::GET, &server, CSRS);
    let resp = req.send().with_context(|| format!("GET {url}"))?;
    let status = resp.status();
    let text = resp.text()?;
    if !status.is_success() {
        bail!("{url}: {status}: {}", message(&text));
    }
    let list: Value = serde_json::from_str(&text).context("the CSR list is not JSON")?;
    let mut signed = 0;
    for csr in list["items"].as_array().into_iter().flatten() {
        let name = csr.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        if args.name.as_deref().is_some_and(|n| n != name) || !waiting(csr) {
            continue;
        }
        let pem = match issue(&ca, csr) {
            Ok(pem) => pem,
            Err(e) => {
                eprintln!("{name}: not signed: {e}");
                continue;
            }
        };
        let mut done = csr.clone();
        done["status"]["certificate"] = Value::from(base64::engine::general_purpose::STANDARD.encode(pem));
        let (url, req) = t.request(reqwest::Method::PUT, &server, &format!("{CSRS}/{name}/status"));
        let resp = req.json(&done).send().with_context(|| format!("PUT {url}"))?;
        let status = resp.status();
        if !status.is_success() {
            eprintln!("{name}: {status}: {}", message(&resp.text().unwrap_or_default()));
            continue;
        }
        println!("signed {name}");
        signed += 1;
    }
    if signed == 0 && args.name.is_some() {
        bail!("{} was not signed (not found, not approved, already issued, or refused above)", args.name.unwrap());
    }
    Ok(())
}

/// Approved, neither denied nor failed, not yet issued, for a signer this CA is.
fn waiting(csr: &Value) -> bool {
    let signer = csr.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or("");
    let conditions = csr.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let has = |t: &str| conditions.iter().any(|c| c["type"] == t && c["status"] != "False");
    let issued = csr.pointer("/status/certificate").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
    (signer == KUBELET_SIGNER || signer == CLIENT_SIGNER)
        && has("Approved")
        && !has("Denied")
        && !has("Failed")
        && !issued
}

/// The signed certificate (PEM) for `csr`, or why the signer refuses it.
fn issue(ca: &Ca, csr: &Value) -> anyhow::Result<String> {
    let request = csr.pointer("/spec/request").and_then(Value::as_str).context("no spec.request")?;
    let pem = base64::engine::general_purpose::STANDARD.decode(request).context("spec.request is not base64")?;
    let pem = String::from_utf8(pem).context("spec.request is not PEM")?;
    let mut params = CertificateSigningRequestParams::from_pem(&pem).map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = |t: DnType| -> Vec<String> {
        params.params.distinguished_name.iter().filter(|(k, _)| **k == t).map(|(_, v)| dn_text(v)).collect()
    };
    let (cn, orgs) = (text(DnType::CommonName), text(DnType::OrganizationName));
    let usages: Vec<&str> =
        csr.pointer("/spec/usages").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    if !usages.contains(&"client auth") {
        bail!("the usages must include \"client auth\"");
    }
    if let Some(u) = usages.iter().find(|u| !["digital signature", "key encipherment", "client auth"].contains(u)) {
        bail!("usage {u:?} is not allowed for a client certificate");
    }
    if orgs.iter().any(|o| o == MASTERS) {
        bail!("a client certificate for {MASTERS} is not signed on request");
    }
    let signer = csr.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or("");
    if signer == KUBELET_SIGNER {
        if orgs != ["system:nodes"] {
            bail!("organization must be [\"system:nodes\"], is {orgs:?}");
        }
        if cn.len() != 1 || !cn[0].starts_with("system:node:") || cn[0].len() == "system:node:".len() {
            bail!("common name must be \"system:node:<name>\", is {cn:?}");
        }
        if !params.params.subject_alt_names.is_empty() {
            bail!("a kubelet's client certificate has no subject alternative names");
        }
    }
    let seconds = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map_or(DEFAULT_SECONDS, |s| s.clamp(MIN_SECONDS, DEFAULT_SECONDS));
    let now = time::OffsetDateTime::now_utc();
    // kube backdates by 5 minutes for clocks that disagree.
    params.params.not_before = now - time::Duration::minutes(5);
    params.params.not_after = now + time::Duration::seconds(seconds);
    params.params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.params.is_ca = rcgen::IsCa::ExplicitNoCa;
    ca.sign_request(params)
}

fn dn_text(v: &DnValue) -> String {
    match v {
        DnValue::Utf8String(s) => s.clone(),
        DnValue::PrintableString(s) => s.as_str().to_string(),
        DnValue::Ia5String(s) => s.as_str().to_string(),
        DnValue::TeletexString(s) => s.as_str().to_string(),
        DnValue::BmpString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        DnValue::UniversalString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        _ => String::new(),
    }
}
