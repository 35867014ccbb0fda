//! Lease (coordination.k8s.io/v1): printed with its holder.

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{grouped, ResourceDef, Scope};

pub static DEF: ResourceDef =
    grouped("coordination.k8s.io", "Lease", "leases", "lease", Scope::Namespaced, "LeaseList");

const LEASE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is \
         used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
    ),
    AGE,
];

pub struct Lease;

impl Strategy for Lease {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn columns(&self) -> &'static [Column] {
        LEASE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), str_at(obj, "/spec/holderIdentity").into(), age(obj, now).into()])
    }
}
