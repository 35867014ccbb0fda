//! ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation; each webhook named by a qualified name with three segments, calling
//! exactly one of a URL or a service, with side effects and review versions stated;
//! defaults for failure and match policy, selectors, timeout, rules' scope;
//! stored and validated only (kuorum does not call webhooks); printed with the count.

use serde_json::Value;

use super::admission::{validate_webhooks, webhook_defaults};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "ValidatingWebhookConfiguration",
    plural: "validatingwebhookconfigurations",
    singular: "validatingwebhookconfiguration",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
    list_kind: "ValidatingWebhookConfigurationList",
    tracks_generation: true,
};

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE,
];

pub struct ValidatingWebhookConfiguration;

impl Strategy for ValidatingWebhookConfiguration {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        webhook_defaults(obj, false);
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        validate_webhooks(obj, false)
    }

    fn columns(&self) -> &'static [Column] {
        WEBHOOK_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), (arr_at(obj, "/webhooks").len() as i64).into(), age(obj, now).into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn webhook_names_are_unique_and_reinvocation_is_not_checked() {
        let hook = json!({"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://hooks.example.com/validate"}, "reinvocationPolicy": "Always"});
        let obj = json!({"webhooks": [hook, hook]}).as_object().unwrap().clone();
        let shown: Vec<String> =
            ValidatingWebhookConfiguration.validate(&obj, None).iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["webhooks[1].name: Duplicate value: \"a.b.c\""]);
    }
}
