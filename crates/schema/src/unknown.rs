//! Owns unknown-field detection: the fields of an object that its schema does not know,
//! as kube-apiserver names them for `fieldValidation` (`spec.containers[0].imagee`).

use serde_json::Value;

use crate::{Schema, Shape};

/// The paths of the fields in `value` that `schema` does not declare, in document order.
///
/// ```text
/// {"spec": {"replicas": 1, "replica": 2, "template": {"spec": {"containers": [{"imagee": "x"}]}}}}
///   -> ["spec.replica", "spec.template.spec.containers[0].imagee"]
/// ```
pub fn unknown_fields(schema: Schema<'_>, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, value, &mut String::new(), &mut out);
    out
}

fn walk(schema: Schema<'_>, value: &Value, path: &mut String, out: &mut Vec<String>) {
    match (schema.shape(), value) {
        (Shape::Struct, Value::Object(map)) => {
            for (key, child) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                match schema.property(key) {
                    Some(s) => walk(s, child, path, out),
                    None if schema.preserves_unknown_fields() => {}
                    None => match schema.values() {
                        Some(s) => walk(s, child, path, out),
                        None => out.push(path.clone()),
                    },
                }
                path.truncate(len);
            }
        }
        (Shape::Map, Value::Object(map)) => {
            if let Some(s) = schema.values() {
                for (key, child) in map {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    walk(s, child, path, out);
                    path.truncate(len);
                }
            }
        }
        (Shape::List, Value::Array(items)) => {
            if let Some(s) = schema.items() {
                for (i, child) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(s, child, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schemas;
    use serde_json::json;

    #[test]
    fn names_every_unknown_field_with_its_path() {
        let s = Schemas::builtin();
        let deploy = s.kind("apps", "v1", "Deployment").unwrap();
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"a": "b"}, "bogus": 1},
            "spec": {"replicas": 1, "replica": 2, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "imagee": "x"}]}}}});
        assert_eq!(
            unknown_fields(deploy, &obj),
            vec!["metadata.bogus", "spec.replica", "spec.template.spec.containers[1].imagee"]
        );
    }

    #[test]
    fn known_objects_and_free_maps_have_none() {
        let s = Schemas::builtin();
        let cm = s.kind("", "v1", "ConfigMap").unwrap();
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "annotations": {"any.key/x": "v"}},
            "data": {"whatever": "v"}, "immutable": false});
        assert!(unknown_fields(cm, &obj).is_empty());
        assert_eq!(unknown_fields(cm, &json!({"dat": {}})), vec!["dat"]);
    }

    #[test]
    fn preserved_fields_are_never_unknown() {
        let root = json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        let s = Schema::standalone(&root);
        assert!(unknown_fields(s, &json!({"spec": {"a": {"b": 1}}})).is_empty());
        assert_eq!(unknown_fields(s, &json!({"spec": {}, "x": 1})), vec!["x"]);
    }
}
