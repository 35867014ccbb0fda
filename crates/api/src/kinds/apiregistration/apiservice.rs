//! APIService (apiregistration.k8s.io/v1): cluster-scoped, status subresource; named
//! `<version>.<group>`; priorities in range; a local service (no `spec.service`) is
//! created Available and may not carry TLS settings; the service port defaults to 443;
//! printed with its service and availability.

use serde_json::{json, Value};

use crate::kinds::common::{at, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain, BadValue, FieldError, NameRule};

pub static DEF: ResourceDef = ResourceDef {
    group: "apiregistration.k8s.io",
    version: "v1",
    kind: "APIService",
    plural: "apiservices",
    singular: "apiservice",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[STATUS],
    list_kind: "APIServiceList",
    tracks_generation: false,
};

const APISERVICE_COLUMNS: &[Column] = &[
    NAME,
    col("Service", "string", "The reference to the service that hosts this API endpoint."),
    col("Available", "string", "Whether this service is available."),
    AGE,
];

pub struct APIService;

impl Strategy for APIService {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// Any path segment; [`APIService::validate`] then requires `<version>.<group>`.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(service) = child(obj, "spec").and_then(|s| child(s, "service")) {
            set_default(service, "port", json!(443));
        }
    }

    /// Status is the availability controller's; a local service is available at once.
    fn prepare_for_create(&self, obj: &mut Object, now: &str) {
        let local = at(obj, "spec.service").is_none();
        let status = if local {
            json!({"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                "reason": "Local", "message": "Local APIServices are always available"}]})
        } else {
            json!({})
        };
        obj.insert("status".into(), status);
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let (group, version) = (field_str(obj, "spec.group"), field_str(obj, "spec.version"));
        let name = field_str(obj, "metadata.name");
        let required_name = format!("{version}.{group}");
        if !name.is_empty() && name != required_name {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
            ));
        }
        if group.is_empty() && version != "v1" {
            errs.push(FieldError::required(
                "spec.group",
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
        if !group.is_empty() {
            for msg in is_dns1123_subdomain(group) {
                errs.push(FieldError::invalid("spec.group", group, msg));
            }
        }
        for msg in is_dns1035_label(version) {
            errs.push(FieldError::invalid("spec.version", version, msg));
        }
        for (field, max) in [("groupPriorityMinimum", 20000), ("versionPriority", 1000)] {
            let path = format!("spec.{field}");
            let n = at(obj, &path).and_then(Value::as_i64).unwrap_or(0);
            if n <= 0 || n > max {
                errs.push(FieldError::invalid_value(
                    &path,
                    BadValue::Raw(n.to_string()),
                    format!("must be positive and less than {max}"),
                ));
            }
        }
        let ca_bundle = field_str(obj, "spec.caBundle");
        let insecure = at(obj, "spec.insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false);
        if at(obj, "spec.service").is_none() {
            if !ca_bundle.is_empty() {
                // JSON carries the bundle in base64: three bytes for every four characters.
                let bytes = ca_bundle.trim_end_matches('=').len() * 3 / 4;
                errs.push(FieldError::invalid(
                    "spec.caBundle",
                    &format!("{bytes} bytes"),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                errs.push(FieldError::invalid_value(
                    "spec.insecureSkipTLSVerify",
                    BadValue::Raw("true".into()),
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
            return errs;
        }
        for field in ["namespace", "name"] {
            if field_str(obj, &format!("spec.service.{field}")).is_empty() {
                errs.push(FieldError::required(&format!("spec.service.{field}"), ""));
            }
        }
        if insecure && !ca_bundle.is_empty() {
            errs.push(FieldError::invalid_value(
                "spec.insecureSkipTLSVerify",
                BadValue::Raw("true".into()),
                "may not be true if caBundle is present",
            ));
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        APISERVICE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let service = match obj.pointer("/spec/service").filter(|s| s.is_object()) {
            Some(s) => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
            None => "Local".into(),
        };
        Row::plain(vec![name(obj).into(), service.into(), availability(obj).into(), age(obj, now).into()])
    }
}

/// The Available cell: `True`, `False (Reason)`, or `Unknown` without the condition.
fn availability(obj: &Value) -> String {
    let conditions = arr_at(obj, "/status/conditions");
    let Some(c) = conditions.iter().find(|c| str_at(c, "/type") == "Available") else {
        return "Unknown".into();
    };
    match (str_at(c, "/status"), str_at(c, "/reason")) {
        ("True", _) | (_, "") => str_at(c, "/status").into(),
        (status, reason) => format!("{status} ({reason})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_are_version_dot_group() {
        let spec = json!({"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server"}});
        let ok = obj(json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": spec}));
        assert!(APIService.validate(&ok, None).is_empty());
        let bad =
            obj(json!({"metadata": {"name": "metrics"}, "spec": {"group": "metrics.k8s.io", "version": "v1beta1"}}));
        let shown: Vec<String> = APIService.validate(&bad, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
            ]
        );
    }

    #[test]
    fn local_services_are_available_and_printed_local() {
        let mut svc = obj(json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1"}}));
        APIService.prepare_for_create(&mut svc, "2024-01-01T00:00:00Z");
        let row = APIService.row(&Value::Object(svc), 0);
        assert_eq!(row.cells[1..3], [json!("Local"), json!("True")]);
        let remote = json!({"spec": {"service": {"namespace": "ns", "name": "s"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(APIService.row(&remote, 0).cells[1..3], [json!("ns/s"), json!("False (MissingEndpoints)")]);
        let mut remote = obj(json!({"spec": {"service": {"name": "s"}}}));
        APIService.defaults(&mut remote);
        assert_eq!(remote["spec"]["service"]["port"], 443);
    }
}
