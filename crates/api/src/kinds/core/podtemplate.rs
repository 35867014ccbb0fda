//! PodTemplate (core/v1): a stored pod template (`template`, not `spec`). Tracks
//! generation; its pod spec takes the pod defaults and basic validation. Printed with
//! its containers, images and pod labels, and no age.

use serde_json::Value;

use crate::kinds::common::pod_spec;
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};
use crate::validation::{validate_labels, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    tracks_generation: true,
    ..core("PodTemplate", "podtemplates", "podtemplate", Scope::Namespaced, &[], &[], &[], "PodTemplateList")
};

const PODTEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    col("Containers", "string", CONTAINERS_DOC),
    col("Images", "string", IMAGES_DOC),
    col("Pod Labels", "string", "The labels for the pod template."),
];

pub struct PodTemplate;

impl Strategy for PodTemplate {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(pod) = child(obj, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// `ValidatePodTemplateSpec` at `template`: its labels (reported at `template.labels`,
    /// as kube does) and its pod spec.
    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(labels) = obj.get("template").and_then(|t| t.get("metadata")).and_then(|m| m.get("labels")) {
            if let Some(labels) = labels.as_object() {
                errs.extend(validate_labels(labels, "template.labels"));
            }
        }
        pod_spec(obj, "template.spec", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PODTEMPLATE_COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        let (containers, images) = container_cells(arr_at(obj, "/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            containers.into(),
            images.into(),
            format_labels(obj.pointer("/template/metadata/labels")).into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_template_needs_containers_and_gets_pod_defaults() {
        let mut t = json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}})
            .as_object()
            .unwrap()
            .clone();
        PodTemplate.defaults(&mut t);
        assert_eq!(t["template"]["spec"]["restartPolicy"], "Always");
        assert!(PodTemplate.validate(&t, None).is_empty());
        let empty = json!({"template": {"spec": {"containers": []}}}).as_object().unwrap().clone();
        let errs = PodTemplate.validate(&empty, None);
        assert_eq!(errs[0].to_string(), "template.spec.containers: Required value");
    }

    #[test]
    fn printed_with_pod_labels() {
        let t = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]}}});
        assert_eq!(PodTemplate.row(&t, 0).cells, [json!("t"), json!("c,d"), json!("i,j"), json!("a=1,b=2")]);
    }
}
