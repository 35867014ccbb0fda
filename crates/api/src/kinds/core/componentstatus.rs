//! ComponentStatus (core/v1, deprecated upstream): the health of the control plane's parts,
//! probed when asked, never stored; only got and listed (`kubectl get cs`). What kuorum
//! reports as its components is the REST layer's (it alone can see the node's replication);
//! here are the registry entry and kube's printer: `Name`, `Status` (`Healthy` when the
//! `Healthy` condition is `True`, `Unhealthy` otherwise, `Unknown` without one), and that
//! condition's `Message` and `Error`.

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{core, ResourceDef, Scope};

pub static DEF: ResourceDef = ResourceDef {
    verbs: &["get", "list"],
    ..core(
        "ComponentStatus",
        "componentstatuses",
        "componentstatus",
        Scope::Cluster,
        &["cs"],
        &[],
        &[],
        "ComponentStatusList",
    )
};

const COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];

pub struct ComponentStatus;

impl Strategy for ComponentStatus {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        let healthy = arr_at(obj, "/conditions").iter().find(|c| str_at(c, "/type") == "Healthy");
        let (status, message, error) = match healthy {
            Some(c) => {
                let status = if str_at(c, "/status") == "True" { "Healthy" } else { "Unhealthy" };
                (status, str_at(c, "/message"), str_at(c, "/error"))
            }
            None => ("Unknown", "", ""),
        };
        Row::plain(vec![name(obj).into(), status.into(), message.into(), error.into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printed_as_kubectl_get_cs_shows_it() {
        let cells = |v: Value| ComponentStatus.row(&v, 0).cells;
        let cs = |status: &str| {
            json!({"metadata": {"name": "storage"},
                   "conditions": [{"type": "Healthy", "status": status, "message": "m", "error": "e"}]})
        };
        assert_eq!(cells(cs("True")), [json!("storage"), json!("Healthy"), json!("m"), json!("e")]);
        assert_eq!(cells(cs("False"))[1], "Unhealthy");
        assert_eq!(cells(cs("Unknown"))[1], "Unhealthy");
        assert_eq!(cells(json!({"metadata": {"name": "x"}}))[1..], [json!("Unknown"), json!(""), json!("")]);
        assert_eq!(COLUMNS.iter().map(|c| c.name).collect::<Vec<_>>(), ["Name", "Status", "Message", "Error"]);
    }

    #[test]
    fn only_got_and_listed() {
        assert_eq!(DEF.verbs, ["get", "list"]);
        assert_eq!(DEF.short_names, ["cs"]);
        assert!(!DEF.namespaced());
    }
}
