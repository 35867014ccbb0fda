//! ServiceAccount (core/v1): printed with its number of secrets; its `token` subresource
//! takes and answers an `authentication.k8s.io/v1` TokenRequest (served by kuorum-rest's
//! `sa_token`).

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{core, ResourceDef, Scope, SubresourceDef, AUTHENTICATION_GROUP};

pub static DEF: ResourceDef = core(
    "ServiceAccount",
    "serviceaccounts",
    "serviceaccount",
    Scope::Namespaced,
    &["sa"],
    &[],
    &[TOKEN],
    "ServiceAccountList",
);

/// `serviceaccounts/token`: a TokenRequest is created, nothing is stored.
const TOKEN: SubresourceDef =
    SubresourceDef { name: "token", response: Some((AUTHENTICATION_GROUP, "v1", "TokenRequest")), verbs: &["create"] };

const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are \
         allowed to use. Pods are only limited to this list if this service account has a \
         \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \
         \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate \
         namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated \
         service account token secrets for use outside of pods. Instead, tokens can be requested directly using the \
         TokenRequest API, or service account token secrets can be manually created. More info: \
         https://kubernetes.io/docs/concepts/configuration/secret",
    ),
    AGE,
];

pub struct ServiceAccount;

impl Strategy for ServiceAccount {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn columns(&self) -> &'static [Column] {
        SERVICE_ACCOUNT_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), arr_at(obj, "/secrets").len().into(), age(obj, now).into()])
    }
}
