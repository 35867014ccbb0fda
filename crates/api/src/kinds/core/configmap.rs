//! ConfigMap (core/v1): printed with its number of keys.

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{core, ResourceDef, Scope};

pub static DEF: ResourceDef =
    core("ConfigMap", "configmaps", "configmap", Scope::Namespaced, &["cm"], &[], &[], "ConfigMapList");

const CONFIGMAP_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Data",
        "string",
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. \
         Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap \
         with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE,
];

pub struct ConfigMap;

impl Strategy for ConfigMap {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn columns(&self) -> &'static [Column] {
        CONFIGMAP_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let n = obj_len(obj, "/data") + obj_len(obj, "/binaryData");
        Row::plain(vec![name(obj).into(), n.into(), age(obj, now).into()])
    }
}
