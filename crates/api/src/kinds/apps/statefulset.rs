//! StatefulSet (apps/v1): named by a DNS-1123 label (its pods are `<name>-<ordinal>`);
//! tracks generation; status and scale subresources; created with a zero status;
//! defaults for replicas, pod management, the rolling update and the claim retention
//! policy; a required selector matching its template of always-running pods; only
//! replicas, ordinals, template, update strategy, history limit, retention policy and
//! minReadySeconds may change; printed with its ready count.

use serde_json::{json, Value};

use super::workload::{
    always_running_template, int_or_percent, int_or_percent_value, int_or_string_value, spec_without,
};
use crate::kinds::common::{at, dns_label, non_negative, one_of, selector_and_template, str_at};
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, each, set_default, Object, ScaleOf, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, SCALE, STATUS};
use crate::validation::{BadValue, FieldError, NameRule};

pub static DEF: ResourceDef = ResourceDef {
    group: "apps",
    version: "v1",
    kind: "StatefulSet",
    plural: "statefulsets",
    singular: "statefulset",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["sts"],
    categories: &["all"],
    subresources: &[SCALE, STATUS],
    list_kind: "StatefulSetList",
    tracks_generation: true,
};

const STATEFULSET_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
];

/// The spec fields an update may change (kube's `ValidateStatefulSetUpdate`).
const MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

pub struct StatefulSet;

impl Strategy for StatefulSet {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Label
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "podManagementPolicy", json!("OrderedReady"));
        set_default(spec, "updateStrategy", json!({}));
        if let Some(strategy) = child(spec, "updateStrategy") {
            if strategy.get("type").is_none_or(Value::is_null) {
                strategy.insert("type".into(), json!("RollingUpdate"));
                set_default(strategy, "rollingUpdate", json!({}));
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                if let Some(ru) = child(strategy, "rollingUpdate") {
                    set_default(ru, "partition", json!(0));
                    // MaxUnavailableStatefulSet is beta, on by default, since 1.35.
                    set_default(ru, "maxUnavailable", json!(1));
                }
            }
        }
        set_default(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
        if let Some(policy) = child(spec, "persistentVolumeClaimRetentionPolicy") {
            set_default(policy, "whenDeleted", json!("Retain"));
            set_default(policy, "whenScaled", json!("Retain"));
        }
        set_default(spec, "replicas", json!(1));
        set_default(spec, "revisionHistoryLimit", json!(10));
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
        // Each claim template is defaulted as a PersistentVolumeClaim is.
        for claim in each(spec, "volumeClaimTemplates") {
            if let Some(claim_spec) = child(claim, "spec") {
                set_default(claim_spec, "volumeMode", json!("Filesystem"));
            }
            set_default(claim, "status", json!({}));
            if let Some(status) = child(claim, "status") {
                set_default(status, "phase", json!("Pending"));
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"replicas": 0, "availableReplicas": 0}));
    }

    /// kube's `ValidateStatefulSetSpec`, and on update the fields that may not change.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        match str_at(obj, "spec.podManagementPolicy") {
            "" => errs.push(FieldError::required("spec.podManagementPolicy", "")),
            "OrderedReady" | "Parallel" => {}
            other => errs.push(FieldError::invalid(
                "spec.podManagementPolicy",
                other,
                "must be 'OrderedReady' or 'Parallel'",
            )),
        }
        update_strategy(obj, &mut errs);
        for field in ["whenDeleted", "whenScaled"] {
            let path = format!("spec.persistentVolumeClaimRetentionPolicy.{field}");
            one_of(obj, &path, &["Retain", "Delete"], &mut errs);
        }
        non_negative(obj, "spec.replicas", &mut errs);
        non_negative(obj, "spec.minReadySeconds", &mut errs);
        non_negative(obj, "spec.ordinals.start", &mut errs);
        // A service name persisted before this rule is tolerated on update.
        if old.is_none() {
            dns_label(obj, "spec.serviceName", &mut errs);
        }
        selector_and_template(obj, "spec", "statefulset", &mut errs);
        always_running_template(obj, "StatefulSet", &mut errs);
        if let Some(old) = old {
            if spec_without(obj, MUTABLE) != spec_without(old, MUTABLE) {
                errs.push(FieldError::forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
                     'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and \
                     'minReadySeconds' are forbidden",
                ));
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        STATEFULSET_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let desired = obj.pointer("/spec/replicas").filter(|r| !r.is_null()).map_or(1, |r| int_of(Some(r)));
        let (containers, images) = container_cells(arr_at(obj, "/spec/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            format!("{}/{desired}", int_at(obj, "/status/readyReplicas")).into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
        ])
    }

    fn scale(&self) -> Option<ScaleOf> {
        Some(ScaleOf {
            spec_replicas: ".spec.replicas",
            default_replicas: 1,
            status_replicas: ".status.replicas",
            selector: ".spec.selector",
            selector_is_map: false,
        })
    }
}

/// `RollingUpdate` (a non-negative partition, a maxUnavailable that is not 0) or
/// `OnDelete` without rolling update parameters.
fn update_strategy(obj: &Object, errs: &mut Vec<FieldError>) {
    const PATH: &str = "spec.updateStrategy";
    let rolling = at(obj, "spec.updateStrategy.rollingUpdate");
    match str_at(obj, "spec.updateStrategy.type") {
        "" => errs.push(FieldError::required(PATH, "")),
        "OnDelete" => {
            if let Some(ru) = rolling {
                errs.push(FieldError::invalid_value(
                    &format!("{PATH}.rollingUpdate"),
                    BadValue::of_json(ru),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if rolling.is_none() {
                return;
            }
            non_negative(obj, "spec.updateStrategy.rollingUpdate.partition", errs);
            let path = format!("{PATH}.rollingUpdate.maxUnavailable");
            if let Some(max) = at(obj, &path) {
                // A value over 100% is never 0, so this keeps kube's order of messages.
                int_or_percent(obj, &path, errs);
                if int_or_percent_value(max) == 0 {
                    errs.push(FieldError::invalid_value(&path, int_or_string_value(max), "cannot be 0"));
                }
            }
        }
        _ => errs.push(FieldError::invalid_value(
            PATH,
            BadValue::of_json(at(obj, PATH).unwrap_or(&Value::Null)),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Object {
        let mut sts = json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "pg:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}})
        .as_object()
        .unwrap()
        .clone();
        StatefulSet.defaults(&mut sts);
        StatefulSet.prepare_for_create(&mut sts, "");
        sts
    }

    #[test]
    fn defaults_as_kube_fills_them() {
        let sts = valid();
        assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
        );
        assert_eq!(
            sts["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"], "Filesystem");
        assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["status"], json!({"phase": "Pending"}));
        assert_eq!(sts["status"], json!({"replicas": 0, "availableReplicas": 0}));
        assert!(StatefulSet.validate(&sts, None).is_empty(), "{:?}", StatefulSet.validate(&sts, None));
        assert_eq!(StatefulSet.name_rule(), NameRule::Dns1123Label);
    }

    #[test]
    fn only_some_fields_may_change() {
        let old = valid();
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(5);
        scaled["spec"]["template"]["spec"]["containers"][0]["image"] = json!("pg:17");
        assert!(StatefulSet.validate(&scaled, Some(&old)).is_empty());
        let mut renamed = old.clone();
        renamed["spec"]["serviceName"] = json!("other");
        let errs = StatefulSet.validate(&renamed, Some(&old));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
        assert!(errs[0].detail.starts_with("updates to statefulset spec for fields other than 'replicas'"));
    }

    #[test]
    fn strategies_and_policies() {
        let mut sts = valid();
        sts["spec"]["podManagementPolicy"] = json!("Random");
        sts["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(0);
        sts["spec"]["serviceName"] = json!("DB");
        let fields: Vec<String> = StatefulSet.validate(&sts, None).iter().map(|e| e.to_string()).collect();
        assert_eq!(
            fields[0],
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
        );
        assert_eq!(
            fields[1],
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: cannot be 0"
        );
        assert!(fields[2].starts_with("spec.serviceName: Invalid value: \"DB\": a lowercase RFC 1123 label"));
    }

    #[test]
    fn rows_show_ready_of_desired() {
        let mut sts = valid();
        sts["status"] = json!({"readyReplicas": 1});
        let cells = StatefulSet.row(&Value::Object(sts), 0).cells;
        assert_eq!(cells[1], "1/1");
        assert_eq!(cells[3..], [json!("c"), json!("pg:16")]);
    }
}
