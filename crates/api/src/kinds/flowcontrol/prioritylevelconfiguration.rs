//! PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io/v1): cluster-scoped, tracks
//! generation, status subresource; `type` is Exempt (only for `exempt`) or Limited;
//! Limited defaults to 30 nominal shares, 0% lendable and, when queuing, 64 queues, hand
//! size 8 and 50 per queue; printed with its shares and queuing.

use serde_json::{json, Value};

use crate::kinds::common::{at, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "flowcontrol.apiserver.k8s.io",
    version: "v1",
    kind: "PriorityLevelConfiguration",
    plural: "prioritylevelconfigurations",
    singular: "prioritylevelconfiguration",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "PriorityLevelConfigurationList",
    tracks_generation: true,
};

/// At most this many queues (10^7).
const MAX_QUEUES: i64 = 10_000_000;
/// Shuffle sharding's `MaxHashBits`.
const MAX_HASH_BITS: f64 = 60.0;

const TYPE_DOC: &str = "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.";
const SHARES_DOC: &str = "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)";
const QUEUES_DOC: &str = "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.";
const HAND_SIZE_DOC: &str = "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.";
const QUEUE_LENGTH_DOC: &str = "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.";

const PRIORITY_LEVEL_COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", TYPE_DOC),
    col("NominalConcurrencyShares", "string", SHARES_DOC),
    col("Queues", "string", QUEUES_DOC),
    col("HandSize", "string", HAND_SIZE_DOC),
    col("QueueLengthLimit", "string", QUEUE_LENGTH_DOC),
    AGE,
];

pub struct PriorityLevelConfiguration;

impl Strategy for PriorityLevelConfiguration {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        if let Some(exempt) = child(spec, "exempt") {
            set_default(exempt, "nominalConcurrencyShares", json!(0));
            set_default(exempt, "lendablePercent", json!(0));
        }
        let Some(limited) = child(spec, "limited") else { return };
        set_default(limited, "nominalConcurrencyShares", json!(30));
        set_default(limited, "lendablePercent", json!(0));
        if let Some(queuing) = child(limited, "limitResponse").and_then(|r| child(r, "queuing")) {
            // Zero means unset here.
            for (field, default) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                if queuing.get(field).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    queuing.insert(field.into(), json!(default));
                }
            }
        }
    }

    /// The status is the flow-control controller's.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let ty = field_str(obj, "spec.type");
        if (field_str(obj, "metadata.name") == "exempt") != (ty == "Exempt") {
            errs.push(FieldError::invalid("spec.type", ty, "type must be 'Exempt' if and only if name is 'exempt'"));
        }
        match ty {
            "Exempt" => {
                if at(obj, "spec.limited").is_some() {
                    errs.push(FieldError::forbidden("spec.limited", "must be nil if the type is not Limited"));
                }
                if let Some(exempt) = at(obj, "spec.exempt") {
                    shares_and_percents(exempt, "spec.exempt", &mut errs);
                }
            }
            "Limited" => {
                if at(obj, "spec.exempt").is_some() {
                    errs.push(FieldError::forbidden("spec.exempt", "must be nil if the type is Limited"));
                }
                match at(obj, "spec.limited") {
                    None => errs.push(FieldError::required("spec.limited", "must not be empty when type is Limited")),
                    Some(limited) => validate_limited(limited, &mut errs),
                }
            }
            _ => errs.push(FieldError::not_supported("spec.type", ty, &["Exempt", "Limited"])),
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PRIORITY_LEVEL_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let none = || Value::from("<none>");
        let limited = obj.pointer("/spec/limited").filter(|l| l.is_object());
        let queuing = limited.and_then(|l| l.pointer("/limitResponse/queuing")).filter(|q| q.is_object());
        let of = |v: Option<&Value>, ptr: &str| v.map_or_else(none, |v| int_at(v, ptr).into());
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/type").into(),
            of(limited, "/nominalConcurrencyShares"),
            of(queuing, "/queues"),
            of(queuing, "/handSize"),
            of(queuing, "/queueLengthLimit"),
            age(obj, now).into(),
        ])
    }
}

fn int_value(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn invalid(path: &str, n: i64, detail: impl Into<String>) -> FieldError {
    FieldError::invalid_value(path, BadValue::Raw(n.to_string()), detail)
}

/// Non-negative nominal shares and a lendable percentage from 0 to 100.
fn shares_and_percents(level: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = int_value(level, "nominalConcurrencyShares").filter(|n| *n < 0) {
        errs.push(invalid(&format!("{path}.nominalConcurrencyShares"), n, "must be a non-negative integer"));
    }
    if let Some(n) = int_value(level, "lendablePercent").filter(|n| !(0..=100).contains(n)) {
        errs.push(invalid(&format!("{path}.lendablePercent"), n, "must be between 0 and 100, inclusive"));
    }
}

fn validate_limited(limited: &Value, errs: &mut Vec<FieldError>) {
    shares_and_percents(limited, "spec.limited", errs);
    if let Some(n) = int_value(limited, "borrowingLimitPercent").filter(|n| *n < 0) {
        errs.push(invalid("spec.limited.borrowingLimitPercent", n, "if specified, must be a non-negative integer"));
    }
    let response = limited.get("limitResponse").cloned().unwrap_or(Value::Null);
    let queuing = response.get("queuing").filter(|q| !q.is_null());
    match response.get("type").and_then(Value::as_str).unwrap_or("") {
        "Reject" if queuing.is_some() => errs.push(FieldError::forbidden(
            "spec.limited.limitResponse.queuing",
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        "Reject" => {}
        "Queue" => match queuing {
            None => errs.push(FieldError::required(
                "spec.limited.limitResponse.queuing",
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => validate_queuing(q, errs),
        },
        other => errs.push(FieldError::not_supported("spec.limited.limitResponse.type", other, &["Queue", "Reject"])),
    }
}

/// Positive counts, at most 10^7 queues, a hand no larger than the deck and within
/// shuffle sharding's 60 bits of entropy.
fn validate_queuing(q: &Value, errs: &mut Vec<FieldError>) {
    const PATH: &str = "spec.limited.limitResponse.queuing";
    let limit = int_value(q, "queueLengthLimit").unwrap_or(0);
    if limit <= 0 {
        errs.push(invalid(&format!("{PATH}.queueLengthLimit"), limit, "must be positive"));
    }
    let queues = int_value(q, "queues").unwrap_or(0);
    if queues <= 0 {
        errs.push(invalid(&format!("{PATH}.queues"), queues, "must be positive"));
    } else if queues > MAX_QUEUES {
        errs.push(invalid(&format!("{PATH}.queues"), queues, format!("must not be greater than {MAX_QUEUES}")));
    }
    let hand = int_value(q, "handSize").unwrap_or(0);
    let entropy = ((queues.max(1) as f64).log2() * hand as f64).ceil();
    if hand <= 0 {
        errs.push(invalid(&format!("{PATH}.handSize"), hand, "must be positive"));
    } else if hand > queues {
        errs.push(invalid(&format!("{PATH}.handSize"), hand, format!("should not be greater than queues ({queues})")));
    } else if entropy > MAX_HASH_BITS {
        errs.push(invalid(
            &format!("{PATH}.handSize"),
            hand,
            format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn limited_levels_get_kubes_defaults() {
        let mut pl = obj(json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
            "queuing": {}}}}}));
        PriorityLevelConfiguration.defaults(&mut pl);
        assert_eq!(
            pl["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {"type": "Queue",
                "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        assert!(PriorityLevelConfiguration.validate(&pl, None).is_empty());
        let row = PriorityLevelConfiguration.row(&Value::Object(pl), 0);
        assert_eq!(row.cells[1..6], [json!("Limited"), json!(30), json!(64), json!(8), json!(50)]);
    }

    #[test]
    fn type_and_limit_response_are_checked() {
        let shown = |v: Value| -> Vec<String> {
            PriorityLevelConfiguration.validate(&obj(v), None).iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            shown(json!({"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {"lendablePercent": 101,
                "limitResponse": {"type": "Queue"}}}})),
            [
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                "spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited",
            ]
        );
        assert_eq!(
            shown(json!({"metadata": {"name": "x"}, "spec": {"type": "Exempt"}})),
            ["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"]
        );
        assert_eq!(
            shown(json!({"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {"limitResponse": {
                "type": "Queue", "queuing": {"queues": 4, "handSize": 5, "queueLengthLimit": 1}}}}})),
            ["spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)"]
        );
        let row = PriorityLevelConfiguration.row(&json!({"spec": {"type": "Exempt"}}), 0);
        assert_eq!(row.cells[2], json!("<none>"));
    }
}
