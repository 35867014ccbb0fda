//! Internal checks: every kind's message exists, and every field of every message the served
//! kinds reach agrees, in name and JSON shape, with the Kubernetes OpenAPI schemas kuorum
//! serves (`crates/schema/k8s/definitions.json`, Kubernetes 1.37).

use crate::mapping::{is_inline, json_name, Special, INLINE};
use crate::{kinds, message, pool};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};

/// Built-in kinds without a message here: served as JSON only. CustomResourceDefinition's
/// proto is not vendored (its schemas' JSON-valued fields need mappings of their own);
/// the others are newer than the vendored 1.35 protos.
const WITHOUT_PROTOS: &[&str] = &[
    "certificates.k8s.io/v1/ClusterTrustBundle",
    "certificates.k8s.io/v1/PodCertificateRequest",
    "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
    "admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding",
    "apiextensions.k8s.io/v1/CustomResourceDefinition",
    "resource.k8s.io/v1/DeviceTaintRule",
    "storagemigration.k8s.io/v1/StorageVersionMigration",
];

/// The OpenAPI definition name of a message (`io.k8s.api.core.v1.Pod`; the aggregator's
/// package is `kube-aggregator` there).
fn openapi_name(full_name: &str) -> String {
    format!("io.k8s.{}", full_name.replacen("kube_aggregator.", "kube-aggregator.", 1))
}

#[test]
fn every_kind_has_its_message() {
    for ((api_version, kind), name) in kinds() {
        assert!(message(name).is_some(), "{api_version} {kind}: no message {name}");
        assert!(crate::supports(api_version, kind));
    }
    let missing: Vec<String> = kuorum_api::registry::resources()
        .iter()
        .filter(|d| !crate::supports(&d.api_version(), d.kind))
        .map(|d| format!("{}/{}", d.api_version(), d.kind))
        .collect();
    assert_eq!(missing, WITHOUT_PROTOS, "built-in kinds without a protobuf form");
    // kube-scheduler binds pods in protobuf; kubectl create token sends a TokenRequest.
    assert!(crate::supports("v1", "Binding"));
    assert!(crate::supports("authentication.k8s.io/v1", "TokenRequest"));
    assert!(crate::supports("policy/v1", "Eviction"));
    assert!(!crate::supports("apps/v1", "Pod"));
}

#[test]
fn inline_fields_exist() {
    for (msg, field) in INLINE {
        let desc = message(msg).unwrap_or_else(|| panic!("no message {msg}"));
        let f = desc.get_field_by_name(field).unwrap_or_else(|| panic!("no field {msg}.{field}"));
        assert!(f.kind().as_message().is_some() && !f.is_list(), "{msg}.{field} is not a singular message");
    }
}

/// Which apimachinery messages have a JSON form of their own: all of them are recognised.
#[test]
fn specials_resolve() {
    for name in [
        "apimachinery.pkg.apis.meta.v1.Time",
        "apimachinery.pkg.apis.meta.v1.MicroTime",
        "apimachinery.pkg.apis.meta.v1.Duration",
        "apimachinery.pkg.apis.meta.v1.FieldsV1",
        "apimachinery.pkg.apis.meta.v1.Verbs",
        "apimachinery.pkg.util.intstr.IntOrString",
        "apimachinery.pkg.api.resource.Quantity",
        "apimachinery.pkg.runtime.RawExtension",
    ] {
        let desc = message(name).unwrap_or_else(|| panic!("no message {name}"));
        assert!(Special::of(&desc).is_some(), "{name}");
    }
    assert!(pool().get_message_by_name("apimachinery.pkg.runtime.Unknown").is_some());
}

/// Fields of Kubernetes 1.36/1.37 that the vendored 1.35 protos lack (dropped on encode).
/// A new entry here means the schema moved on: consider newer protos.
const NEWER_THAN_PROTOS: &[&str] = &[
    "api.authentication.v1.TokenRequestSpec.attestations",
    "api.autoscaling.v2.HorizontalPodAutoscalerCondition.observedGeneration",
    "api.batch.v1.JobSpec.scheduling",
    "api.core.v1.ClusterTrustBundleProjection.user",
    "api.core.v1.ConfigMapVolumeSource.defaultUser",
    "api.core.v1.DownwardAPIVolumeFile.user",
    "api.core.v1.DownwardAPIVolumeSource.defaultUser",
    "api.core.v1.EmptyDirVolumeSource.mode",
    "api.core.v1.GRPCAction.mode",
    "api.core.v1.HTTPGetAction.protocol",
    "api.core.v1.KeyToPath.user",
    "api.core.v1.NodeSpec.podPreemptionPolicy",
    "api.core.v1.NodeSystemInfo.runningInUserNamespace",
    "api.core.v1.PersistentVolumeClaimStatus.healthStatus",
    "api.core.v1.PodCertificateProjection.user",
    "api.core.v1.PodSpec.evictionResponders",
    "api.core.v1.PodSpec.schedulingGroup",
    "api.core.v1.PodStatus.nodeAllocatableResourceClaimStatuses",
    "api.core.v1.PodStatus.volumeHealth",
    "api.core.v1.ProjectedVolumeSource.defaultUser",
    "api.core.v1.ResourceHealth.message",
    "api.core.v1.SecretVolumeSource.defaultUser",
    "api.core.v1.ServiceAccountTokenProjection.user",
    "api.core.v1.VolumeMount.bindMountOptions",
    "api.core.v1.VolumeMountStatus.volumeStatus",
    "api.resource.v1.Device.nodeAllocatableResources",
    "api.resource.v1.DeviceAttribute.bools",
    "api.resource.v1.DeviceAttribute.ints",
    "api.resource.v1.DeviceAttribute.strings",
    "api.resource.v1.DeviceAttribute.versions",
    "api.resource.v1.DeviceCounterConsumption.compatibilityGroups",
    "api.resource.v1.DeviceRequestAllocationResult.skipNodeOperations",
    "api.resource.v1.DeviceSubRequest.derivedAttributes",
    "api.resource.v1.ExactDeviceRequest.derivedAttributes",
    "api.resource.v1.ResourceSliceSpec.partitionTypeAttribute",
    "api.resource.v1.ResourceSliceSpec.skipNodeOperations",
    "api.storage.v1.CSIDriverSpec.preventPodSchedulingIfMissing",
    "api.storage.v1.CSINode.status",
    "apimachinery.pkg.apis.meta.v1.ListMeta.shardInfo",
];

/// Fields of the 1.35 protos that Kubernetes 1.37 no longer has (alpha fields since replaced).
const OLDER_THAN_SCHEMA: &[&str] = &["api.core.v1.PodSpec.workloadRef"];

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> = std::sync::LazyLock::new(serde_json::Map::new);

struct Walk<'a> {
    schemas: &'a serde_json::Map<String, Value>,
    seen: HashSet<String>,
    problems: Vec<String>,
    gaps: BTreeSet<String>,
    checked_fields: usize,
}

impl<'a> Walk<'a> {
    fn schema(&self, name: &str) -> Option<&'a Value> {
        self.schemas.get(&openapi_name(name))
    }

    /// The definition a property refers to (`$ref` directly or as the single `allOf`).
    fn target(&self, prop: &'a Value) -> Option<(&'a str, &'a Value)> {
        let r = prop
            .get("$ref")
            .or_else(|| prop.get("allOf").and_then(|a| a.get(0)).and_then(|a| a.get("$ref")))?
            .as_str()?;
        let name = r.strip_prefix("#/components/schemas/")?;
        Some((name, self.schemas.get(name)?))
    }

    fn message(&mut self, desc: &MessageDescriptor) {
        if !self.seen.insert(desc.full_name().to_string()) {
            return;
        }
        let Some(schema) = self.schema(desc.full_name()) else {
            self.problems.push(format!("{}: no OpenAPI definition", desc.full_name()));
            return;
        };
        let empty = &EMPTY;
        let props: &'a serde_json::Map<String, Value> =
            schema.get("properties").and_then(Value::as_object).unwrap_or(empty);
        let mut names = HashSet::new();
        let mut fields = Vec::new();
        flatten(desc, &mut fields);
        for field in fields {
            let qualified = format!("{}.{}", field.parent_message().full_name(), field.name());
            let owner = desc.full_name();
            names.insert(json_name(&field).to_string());
            let Some(prop) = props.get(json_name(&field)) else {
                if !OLDER_THAN_SCHEMA.contains(&qualified.as_str()) {
                    self.problems.push(format!("{owner}: field {qualified} is not in the OpenAPI schema"));
                }
                continue;
            };
            self.checked_fields += 1;
            self.field(&format!("{owner}.{}", json_name(&field)), &field, prop);
        }
        for name in props.keys() {
            if name != "apiVersion" && name != "kind" && !names.contains(name) {
                self.gaps.insert(format!("{}.{name}", desc.full_name()));
            }
        }
    }

    fn field(&mut self, at: &str, field: &FieldDescriptor, prop: &'a Value) {
        let kind = field.kind();
        if field.is_map() {
            if prop.get("type").and_then(Value::as_str) != Some("object") {
                self.problems.push(format!("{at}: map, but the schema is {prop}"));
                return;
            }
            let value_kind = kind.as_message().unwrap().map_entry_value_field().kind();
            match prop.get("additionalProperties") {
                Some(values) => self.element(&format!("{at}{{}}"), &value_kind, values),
                None => self.problems.push(format!("{at}: map without additionalProperties")),
            }
        } else if field.is_list() {
            if prop.get("type").and_then(Value::as_str) != Some("array") {
                self.problems.push(format!("{at}: repeated, but the schema is not an array"));
                return;
            }
            match prop.get("items") {
                Some(items) => self.element(&format!("{at}[]"), &kind, items),
                None => self.problems.push(format!("{at}: array without items")),
            }
        } else {
            self.element(at, &kind, prop);
        }
    }

    fn element(&mut self, at: &str, kind: &Kind, prop: &'a Value) {
        let ty = prop.get("type").and_then(Value::as_str);
        let format = prop.get("format").and_then(Value::as_str);
        let ok = match kind {
            // A string list wrapped in a message (ExtraValue) that the schema writes inline.
            Kind::Message(m) if matches!(Special::of(m), Some(Special::Verbs)) && ty == Some("array") => true,
            Kind::Message(m) => {
                let Some((name, target)) = self.target(prop) else {
                    self.problems.push(format!("{at}: message {}, but the schema has no $ref", m.full_name()));
                    return;
                };
                if name != openapi_name(m.full_name()) {
                    self.problems.push(format!("{at}: message {}, but the schema refers to {name}", m.full_name()));
                    return;
                }
                match Special::of(m) {
                    None => {
                        self.message(m);
                        true
                    }
                    Some(Special::Time | Special::MicroTime) => {
                        target["type"] == "string" && target["format"] == "date-time"
                    }
                    Some(Special::IntOrString | Special::Quantity) => target.get("oneOf").is_some(),
                    Some(Special::FieldsV1 | Special::RawExtension) => target["type"] == "object",
                    Some(Special::Duration) => target["type"] == "string",
                    Some(Special::Verbs) => target["type"] == "array",
                }
            }
            Kind::Bool => ty == Some("boolean"),
            Kind::String => ty == Some("string") && format != Some("byte"),
            Kind::Bytes => ty == Some("string") && format == Some("byte"),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Uint32 | Kind::Fixed32 => {
                ty == Some("integer") && format == Some("int32")
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint64 | Kind::Fixed64 => {
                ty == Some("integer") && format.is_none_or(|f| f == "int64")
            }
            Kind::Double | Kind::Float => ty == Some("number"),
            Kind::Enum(_) => false,
        };
        if !ok {
            self.problems.push(format!("{at}: proto {kind:?} does not fit the schema {prop}"));
        }
    }
}

/// The fields a message shows in JSON: its own, and those of its inline fields in their place.
fn flatten(desc: &MessageDescriptor, out: &mut Vec<FieldDescriptor>) {
    for field in desc.fields() {
        if is_inline(&field) {
            flatten(field.kind().as_message().unwrap(), out);
        } else {
            out.push(field);
        }
    }
}

#[test]
fn schema_agreement() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../schema/k8s/definitions.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let defs: Value = serde_json::from_str(&text).unwrap();
    let schemas = defs["schemas"].as_object().unwrap();
    let mut walk =
        Walk { schemas, seen: HashSet::new(), problems: Vec::new(), gaps: BTreeSet::new(), checked_fields: 0 };
    let mut names: Vec<&String> = kinds().values().collect();
    names.sort();
    for name in names {
        walk.message(&message(name).unwrap());
    }
    assert!(walk.problems.is_empty(), "{} problems:\n{}", walk.problems.len(), walk.problems.join("\n"));
    let expected: BTreeSet<String> = NEWER_THAN_PROTOS.iter().map(|s| s.to_string()).collect();
    assert_eq!(walk.gaps, expected, "OpenAPI properties without a proto field");
    // Sanity: the walk reached the bulk of core/v1.
    assert!(walk.seen.len() > 150, "only {} messages reached", walk.seen.len());
    assert!(walk.checked_fields > 800, "only {} fields checked", walk.checked_fields);
    eprintln!("schema agreement: {} messages, {} fields", walk.seen.len(), walk.checked_fields);
}
