//! Secret (core/v1): `type` defaults to `Opaque` and can select; printed with its type and
//! number of keys.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::kinds::printing::*;
use crate::kinds::{set_default, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};

pub static DEF: ResourceDef = core("Secret", "secrets", "secret", Scope::Namespaced, &[], &[], &[], "SecretList");

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data. More info: \
         https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
    ),
    col(
        "Data",
        "string",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The \
         serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly \
         non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE,
];

pub struct Secret;

impl Strategy for Secret {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        set_default(obj, "type", json!("Opaque"));
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }

    fn columns(&self) -> &'static [Column] {
        SECRET_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        // kube-apiserver stores stringData merged into data and defaults the type.
        let keys: BTreeSet<&str> = ["/data", "/stringData"]
            .iter()
            .filter_map(|p| obj.pointer(p).and_then(Value::as_object))
            .flat_map(|m| m.keys().map(String::as_str))
            .collect();
        let ty = non_empty(str_at(obj, "/type")).unwrap_or("Opaque");
        Row::plain(vec![name(obj).into(), ty.into(), keys.len().into(), age(obj, now).into()])
    }
}
