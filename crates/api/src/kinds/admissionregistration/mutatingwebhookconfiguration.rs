//! MutatingWebhookConfiguration (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation; each webhook named by a qualified name with three segments, calling
//! exactly one of a URL or a service, with side effects and review versions stated;
//! defaults for failure and match policy, selectors, timeout, reinvocation, rules' scope;
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
    kind: "MutatingWebhookConfiguration",
    plural: "mutatingwebhookconfigurations",
    singular: "mutatingwebhookconfiguration",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
    list_kind: "MutatingWebhookConfigurationList",
    tracks_generation: true,
};

const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE,
];

pub struct MutatingWebhookConfiguration;

impl Strategy for MutatingWebhookConfiguration {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        webhook_defaults(obj, true);
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        validate_webhooks(obj, true)
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
    fn mutating_webhooks_reinvoke_never_by_default_and_print_their_count() {
        let mut obj = json!({"metadata": {"name": "m"}, "webhooks": [{"name": "a.b.c", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://hooks.example.com/mutate"}}]})
        .as_object()
        .unwrap()
        .clone();
        MutatingWebhookConfiguration.defaults(&mut obj);
        assert_eq!(obj["webhooks"][0]["reinvocationPolicy"], "Never");
        assert!(MutatingWebhookConfiguration.validate(&obj, None).is_empty());
        obj["webhooks"][0]["reinvocationPolicy"] = json!("Always");
        assert_eq!(MutatingWebhookConfiguration.validate(&obj, None)[0].field, "webhooks[0].reinvocationPolicy");
        assert_eq!(MutatingWebhookConfiguration.row(&Value::Object(obj), 0).cells[1], json!(1));
    }
}
