//! Node credentials on a real `kuorum up` cluster: a kubelet's TLS bootstrap as kube runs
//! it. A CertificateSigningRequest for `system:node:n1` in `system:nodes` (made with a
//! fresh key, as a kubelet makes it) is approved with `kubectl certificate approve`,
//! signed by `kuorum certs sign-csr` with the cluster's CA, and the certificate it wrote
//! to `status.certificate` authenticates as the node on every member. A request for
//! `system:masters`, approved too, is left unsigned; one that is not approved is not
//! touched.

use std::fs;
use std::process::Command;

use base64::Engine;
use kuorum_e2e::{kubectl_bin, kuorum_bin, TlsClientOptions, UpCluster};
use serde_json::{json, Value};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const KUBELET_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// A key and the PEM of a certificate request for `cn` in `org`, signed by that key.
fn request(cn: &str, org: &str) -> (rcgen::KeyPair, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, cn);
    dn.push(rcgen::DnType::OrganizationName, org);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key).unwrap().pem().unwrap();
    (key, csr)
}

fn csr_object(name: &str, pem: &str, signer: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
           "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem), "signerName": signer,
                    "usages": ["digital signature", "client auth"]}})
}

#[test]
fn a_kubelets_approved_request_is_signed_and_authenticates_as_the_node() {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    if kubectl_bin().is_none() {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return;
    }
    let up = UpCluster::start(&bin, 3).unwrap_or_else(|e| panic!("kuorum up: {e:#}"));
    let admin = up.client(Some("admin"), &TlsClientOptions::default()).unwrap();
    let url = |id: u64, path: &str| format!("{}{path}", up.url(id));

    let (key, pem) = request("system:node:n1", "system:nodes");
    let (_, masters) = request("intruder", "system:masters");
    let (_, pending) = request("system:node:n2", "system:nodes");
    for (name, pem, signer) in [
        ("node-n1", &pem, KUBELET_SIGNER),
        ("intruder", &masters, "kubernetes.io/kube-apiserver-client"),
        ("node-n2", &pending, KUBELET_SIGNER),
    ] {
        let r = admin.post(&url(1, CSRS), &csr_object(name, pem, signer)).unwrap();
        assert_eq!(r.status, 201, "{name}: {}", r.text);
    }
    for name in ["node-n1", "intruder"] {
        let out = up.kubectl(&["certificate", "approve", name]).unwrap();
        assert!(out.success(), "approve {name}: {}", out.stderr);
    }

    let out = Command::new(&bin)
        .args(["certs", "sign-csr", "--dir"])
        .arg(up.pki())
        .arg("--kubeconfig")
        .arg(up.kubeconfig())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sign-csr: {stdout}\n{stderr}");
    assert!(stdout.contains("signed node-n1"), "{stdout}");
    assert!(stderr.contains("intruder: not signed: a client certificate for system:masters"), "{stderr}");
    assert!(!stdout.contains("node-n2") && !stdout.contains("intruder"), "{stdout}");

    // The certificate, read through another node, is the node's identity everywhere.
    let signed = admin.get(&url(2, &format!("{CSRS}/node-n1"))).unwrap().body;
    let cert = base64::engine::general_purpose::STANDARD
        .decode(signed["status"]["certificate"].as_str().expect("a certificate"))
        .unwrap();
    fs::write(up.pki().join("kubelet-n1.crt"), &cert).unwrap();
    fs::write(up.pki().join("kubelet-n1.key"), key.serialize_pem()).unwrap();
    let kubelet = up.client(Some("kubelet-n1"), &TlsClientOptions::default()).unwrap();
    for id in up.ids() {
        let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
        let r = kubelet.post(&url(id, "/apis/authentication.k8s.io/v1/selfsubjectreviews"), &review).unwrap();
        assert_eq!(r.status, 201, "node {id}: {}", r.text);
        assert_eq!(r.body["status"]["userInfo"]["username"], "system:node:n1");
        let groups = r.body["status"]["userInfo"]["groups"].as_array().unwrap();
        assert!(groups.contains(&json!("system:nodes")), "{groups:?}");
    }
    for name in ["intruder", "node-n2"] {
        let csr = admin.get(&url(3, &format!("{CSRS}/{name}"))).unwrap().body;
        assert!(csr["status"].get("certificate").is_none(), "{name}: {csr}");
    }
}
