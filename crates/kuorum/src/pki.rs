//! A cluster's certificates: a local CA, one certificate per node (server and client
//! auth, for the REST port and for mutual TLS between peers) and client certificates
//! for users. `kuorum certs` writes them; `kuorum up` makes them on its first start.
//!
//! Files in the directory: `ca.crt`/`ca.key`, `node<N>.crt`/`.key`, `admin.crt`/`.key`
//! (`CN=kuorum-admin, O=system:masters`), `<user>.crt`/`.key`, `sa.key`, the key
//! every node signs and verifies service-account tokens with (ECDSA P-256, PKCS#8), and
//! kubeadm's front-proxy pair: `front-proxy/ca.crt`/`.key`, a CA of its own, and
//! `front-proxy/front-proxy-client.crt`/`.key` (`CN=front-proxy-client`), which nodes
//! present to extension API servers and accept from authenticating proxies. Keys are
//! written 0600.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// The group kube-apiserver lets do anything.
pub const MASTERS: &str = "system:masters";

/// The issuer `kuorum up` gives its nodes, kube-apiserver's usual one.
pub const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The front-proxy CA's directory, and the common name of its client certificate.
pub const FRONT_PROXY_DIR: &str = "front-proxy";
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// The cluster's service-account signing key.
pub fn service_account_key(dir: &Path) -> PathBuf {
    dir.join("sa.key")
}

/// Writes a new service-account signing key unless `dir` has one: one key for every node,
/// so a token issued through one node is accepted by all.
fn ensure_service_account_key(dir: &Path) -> anyhow::Result<()> {
    let path = service_account_key(dir);
    if !path.exists() {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        write_private(&path, &key.serialize_pem())?;
    }
    Ok(())
}

/// A node's certificate and key.
pub fn node_files(dir: &Path, id: u64) -> (PathBuf, PathBuf) {
    (dir.join(format!("node{id}.crt")), dir.join(format!("node{id}.key")))
}

pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// Valid from the start of last year (clocks of the cluster's hosts may differ a little)
/// for `years` years after this one.
fn validity(params: &mut CertificateParams, years: i32) {
    use chrono::Datelike;
    let year = chrono::Utc::now().year();
    params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + years, 1, 1);
}

impl Ca {
    /// A new CA, written to `dir/ca.crt` and `dir/ca.key`.
    pub fn create(dir: &Path) -> anyhow::Result<Ca> {
        Ca::create_named(dir, "kuorum-ca")
    }

    /// A new CA with the common name `cn`, written to `dir/ca.crt` and `dir/ca.key`.
    pub fn create_named(dir: &Path, cn: &str) -> anyhow::Result<Ca> {
        fs::create_dir_all(dir)?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        params.distinguished_name = dn;
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        validity(&mut params, 10);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        fs::write(dir.join("ca.crt"), cert.pem())?;
        write_private(&dir.join("ca.key"), &key.serialize_pem())?;
        Ok(Ca { cert, key })
    }

    /// The CA in `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<Ca> {
        let pem =
            fs::read_to_string(dir.join("ca.crt")).with_context(|| format!("reading {}/ca.crt", dir.display()))?;
        let key_pem =
            fs::read_to_string(dir.join("ca.key")).with_context(|| format!("reading {}/ca.key", dir.display()))?;
        let key = KeyPair::from_pem(&key_pem)?;
        // Re-created from its own fields and key: same subject and key, so what it signs
        // verifies against the ca.crt on disk.
        let cert = CertificateParams::from_ca_cert_pem(&pem)?.self_signed(&key)?;
        Ok(Ca { cert, key })
    }

    /// Issues a certificate for `cn` in group `orgs` (at most one: rcgen keeps one value
    /// per attribute), valid for `hosts` (DNS names or IPs) when it is a server's, and
    /// writes `dir/<stem>.crt` and `.key`.
    pub fn issue(
        &self,
        dir: &Path,
        stem: &str,
        cn: &str,
        orgs: &[String],
        hosts: &[String],
        server: bool,
    ) -> anyhow::Result<()> {
        let mut params = CertificateParams::new(if server { hosts.to_vec() } else { Vec::new() })?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        for o in orgs {
            dn.push(DnType::OrganizationName, o.as_str());
        }
        params.distinguished_name = dn;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = if server {
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth]
        } else {
            vec![ExtendedKeyUsagePurpose::ClientAuth]
        };
        validity(&mut params, 2);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        fs::write(dir.join(format!("{stem}.crt")), cert.pem())?;
        write_private(&dir.join(format!("{stem}.key")), &key.serialize_pem())?;
        Ok(())
    }
}

impl Ca {
    /// Signs a certificate request as it stands (subject, key, validity and usages set by
    /// the caller): the certificate's PEM.
    pub fn sign_request(&self, request: rcgen::CertificateSigningRequestParams) -> anyhow::Result<String> {
        Ok(request.signed_by(&self.cert, &self.key)?.pem())
    }
}

/// Makes what a local cluster of `nodes` needs in `dir` unless it is all there: a CA, a
/// certificate per node valid for localhost and 127.0.0.1 (and `hosts`), and the admin's.
pub fn ensure_cluster(dir: &Path, nodes: u64, hosts: &[String]) -> anyhow::Result<()> {
    let mut wanted = vec![dir.join("ca.crt"), dir.join("ca.key"), dir.join("admin.crt"), dir.join("admin.key")];
    for id in 1..=nodes {
        let (c, k) = node_files(dir, id);
        wanted.extend([c, k]);
    }
    fs::create_dir_all(dir)?;
    ensure_service_account_key(dir)?;
    ensure_front_proxy(&dir.join(FRONT_PROXY_DIR))?;
    if wanted.iter().all(|p| p.exists()) {
        return Ok(());
    }
    let ca = if dir.join("ca.crt").exists() { Ca::load(dir)? } else { Ca::create(dir)? };
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    names.extend(hosts.iter().cloned());
    for id in 1..=nodes {
        ca.issue(dir, &format!("node{id}"), &format!("kuorum-node-{id}"), &["kuorum:nodes".into()], &names, true)?;
    }
    ca.issue(dir, "admin", "kuorum-admin", &[MASTERS.into()], &[], false)?;
    Ok(())
}

/// The front-proxy CA and its client certificate in `dir`, made if missing (kubeadm's
/// `front-proxy-ca` and `front-proxy-client`).
fn ensure_front_proxy(dir: &Path) -> anyhow::Result<()> {
    let client = dir.join(format!("{FRONT_PROXY_CLIENT}.crt"));
    if client.exists() && dir.join(format!("{FRONT_PROXY_CLIENT}.key")).exists() {
        return Ok(());
    }
    let ca = if dir.join("ca.crt").exists() { Ca::load(dir)? } else { Ca::create_named(dir, "front-proxy-ca")? };
    ca.issue(dir, FRONT_PROXY_CLIENT, FRONT_PROXY_CLIENT, &[], &[], false)
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CertsArgs {
    /// Sign approved CertificateSigningRequests (kubelets', users') with the CA.
    #[command(subcommand)]
    pub action: Option<CertsAction>,
    /// Where the CA and certificates are (created if missing).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Node certificates to make (node1 .. nodeN), with the admin's.
    #[arg(long, default_value_t = 3)]
    pub nodes: u64,
    /// More names or IPs the node certificates are valid for (peer and REST addresses
    /// other than localhost), repeatable.
    #[arg(long = "host")]
    pub hosts: Vec<String>,
    /// Instead: issue a client certificate for this user from the CA in --dir.
    #[arg(long)]
    pub user: Option<String>,
    /// The user's group (with --user). One: the certificate library writes a single
    /// organization; certificates with several, made by other tools, are read in full.
    #[arg(long = "group")]
    pub groups: Vec<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum CertsAction {
    /// Sign the approved, unsigned CertificateSigningRequests of the client signers
    /// (`kubernetes.io/kube-apiserver-client-kubelet`, `kubernetes.io/kube-apiserver-client`)
    /// with the CA in --dir, as kube-controller-manager's signer would.
    SignCsr(crate::csr_signer::SignArgs),
}

pub fn run(args: CertsArgs) -> anyhow::Result<()> {
    if let Some(CertsAction::SignCsr(sign)) = args.action {
        return crate::csr_signer::run(sign);
    }
    let Some(dir) = &args.dir else { bail!("--dir is required") };
    match &args.user {
        Some(user) => {
            if user.is_empty() || user.contains('/') {
                bail!("--user must be a plain name");
            }
            if args.groups.len() > 1 {
                bail!("one --group per certificate (issue another certificate for another group)");
            }
            let ca = Ca::load(dir)?;
            ca.issue(dir, user, user, &args.groups, &[], false)?;
            println!("wrote {0}/{user}.crt and {0}/{user}.key", dir.display());
        }
        None => {
            fs::create_dir_all(dir)?;
            ensure_cluster(dir, args.nodes, &args.hosts)?;
            println!(
                "certificates for {} nodes and the admin, and the service-account key sa.key, are in {}",
                args.nodes,
                dir.display()
            );
        }
    }
    Ok(())
}
