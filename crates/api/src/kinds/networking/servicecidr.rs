//! ServiceCIDR (networking.k8s.io/v1): cluster-scoped; status subresource (kept as sent
//! on create, as kube keeps it); one or two CIDRs in canonical form, one per IP family,
//! fixed once set except that a single-stack range may gain its second family; printed
//! with its CIDRs.

use serde_json::Value;

use super::addr::{go_strings, is_ipv4, parse_cidr_sloppy, strict_cidr_errors};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "networking.k8s.io",
    version: "v1",
    kind: "ServiceCIDR",
    plural: "servicecidrs",
    singular: "servicecidr",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "ServiceCIDRList",
    tracks_generation: false,
};

const SERVICE_CIDR_COLUMNS: &[Column] = &[
    NAME,
    col(
        "CIDRs",
        "string",
        "cidrs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which \
         to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is \
         immutable.",
    ),
    AGE,
];

const FIELD: &str = "spec.cidrs";
const IMMUTABLE: &str = "field is immutable";

pub struct ServiceCIDR;

impl Strategy for ServiceCIDR {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// On create, the CIDRs themselves; on update only how they changed (kube does not
    /// check unchanged CIDRs again).
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let cidrs = cidrs_of(obj);
        let Some(old) = old else {
            spec_errors(&cidrs, &mut errs);
            return errs;
        };
        let old_cidrs = cidrs_of(old);
        let changed = |i: usize| FieldError::invalid(&format!("{FIELD}[{i}]"), cidrs[i], IMMUTABLE);
        if old_cidrs.len() == cidrs.len() {
            errs.extend((0..cidrs.len()).filter(|i| cidrs[*i] != old_cidrs[*i]).map(changed));
        } else if old_cidrs.len() == 1 && cidrs.len() == 2 {
            // A single-stack range may become dual-stack.
            if cidrs[0] != old_cidrs[0] {
                errs.push(changed(0));
            }
            spec_errors(&cidrs, &mut errs);
        } else {
            errs.push(FieldError::invalid_value(FIELD, BadValue::Raw(go_strings("string", &cidrs)), IMMUTABLE));
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        SERVICE_CIDR_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let cidrs: Vec<&str> = arr_at(obj, "/spec/cidrs").iter().filter_map(Value::as_str).collect();
        Row::plain(vec![name(obj).into(), cidrs.join(",").into(), age(obj, now).into()])
    }
}

fn cidrs_of(obj: &Object) -> Vec<&str> {
    let cidrs = obj.get("spec").and_then(|s| s.get("cidrs")).and_then(Value::as_array);
    cidrs.into_iter().flatten().map(|c| c.as_str().unwrap_or("")).collect()
}

/// One or two valid CIDRs, of different families.
fn spec_errors(cidrs: &[&str], errs: &mut Vec<FieldError>) {
    if cidrs.is_empty() {
        errs.push(FieldError::required(FIELD, "at least one CIDR required"));
        return;
    }
    if cidrs.len() > 2 {
        let spec = format!("networking.ServiceCIDRSpec{{CIDRs:{}}}", go_strings("string", cidrs));
        errs.push(FieldError::invalid_value(FIELD, BadValue::Raw(spec), "may only hold up to 2 values"));
        return;
    }
    for (i, cidr) in cidrs.iter().enumerate() {
        for msg in strict_cidr_errors(cidr) {
            errs.push(FieldError::invalid(&format!("{FIELD}[{i}]"), cidr, msg));
        }
    }
    if let [a, b] = cidrs {
        let family = |c: &str| parse_cidr_sloppy(c).map(|c| is_ipv4(c.ip));
        if family(a).is_some() && family(a) == family(b) {
            errs.push(FieldError::invalid_value(
                FIELD,
                BadValue::Raw(go_strings("string", cidrs)),
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with(cidrs: Value) -> Object {
        json!({"spec": {"cidrs": cidrs}}).as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn one_cidr_per_family_in_canonical_form() {
        assert!(ServiceCIDR.validate(&with(json!(["10.96.0.0/12", "fd00::/108"])), None).is_empty());
        assert_eq!(
            shown(&ServiceCIDR.validate(&with(json!(["10.96.0.1/12", "10.0.0.0/16"])), None)),
            [
                r#"spec.cidrs[0]: Invalid value: "10.96.0.1/12": must not have bits set beyond the prefix length"#,
                r#"spec.cidrs: Invalid value: []string{"10.96.0.1/12", "10.0.0.0/16"}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"#,
            ]
        );
        assert_eq!(
            shown(&ServiceCIDR.validate(&with(json!([])), None)),
            ["spec.cidrs: Required value: at least one CIDR required"]
        );
    }

    #[test]
    fn cidrs_change_only_to_add_a_second_family() {
        let old = with(json!(["10.96.0.0/12"]));
        assert!(ServiceCIDR.validate(&with(json!(["10.96.0.0/12", "fd00::/108"])), Some(&old)).is_empty());
        assert_eq!(
            shown(&ServiceCIDR.validate(&with(json!(["10.0.0.0/12"])), Some(&old))),
            [r#"spec.cidrs[0]: Invalid value: "10.0.0.0/12": field is immutable"#]
        );
        let dual = with(json!(["10.96.0.0/12", "fd00::/108"]));
        assert_eq!(
            shown(&ServiceCIDR.validate(&old, Some(&dual))),
            [r#"spec.cidrs: Invalid value: []string{"10.96.0.0/12"}: field is immutable"#]
        );
        let row = ServiceCIDR
            .row(&json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}}), 0);
        assert_eq!(row.cells[1], "10.96.0.0/12,fd00::/108");
    }
}
