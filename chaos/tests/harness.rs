//! The harness itself: kube-rs clients reach the simulated cluster through faults, a
//! seed replays the same run (same faults, same applied history), and every kind of
//! check can fail a run; kube-runtime's Controller runs inside a simulation.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kuorum_chaos::{ChangeKind, Fault, FaultMix, Simulation};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": {"v": name}})).unwrap()
}

/// A workload that creates 20 ConfigMaps through a load-balanced client, retrying each
/// until it exists (a retry after an unknown outcome may meet 409 AlreadyExists).
fn writer(seed: u64) -> Simulation {
    Simulation::new(seed)
        .duration(Duration::from_secs(25))
        .settle(Duration::from_secs(10))
        .faults(FaultMix::all())
        .workload("writer", |env| async move {
            let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            for i in 0..20 {
                loop {
                    match api.create(&PostParams::default(), &cm(&format!("w-{i}"))).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 => break,
                        Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Ok(())
        })
        .check(|env| async move {
            let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            let list = api.list(&Default::default()).await.map_err(|e| e.to_string())?;
            let n = list.items.iter().filter(|c| c.metadata.name.as_deref().unwrap_or("").starts_with("w-")).count();
            if n != 20 {
                return Err(format!("{n} of 20 ConfigMaps exist"));
            }
            Ok(())
        })
        .check_history(|h| {
            let created =
                h.of("configmaps").filter(|c| c.kind == ChangeKind::Added && c.name.starts_with("w-")).count();
            if created == 20 {
                Ok(())
            } else {
                Err(format!("{created} creations applied, not 20"))
            }
        })
}

#[test]
fn clients_get_through_the_faults_and_a_seed_replays_exactly() {
    let first = writer(3).run().unwrap_or_else(|f| panic!("{f}"));
    assert!(first.faults.len() > 5, "faults: {:?}", first.faults);
    let again = writer(3).run().unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(first.faults, again.faults);
    assert_eq!(first.history.changes.len(), again.history.changes.len());
    assert_eq!(first.trace, again.trace, "one seed, two different runs");
    let other = writer(4).run().unwrap_or_else(|f| panic!("{f}"));
    assert_ne!(first.trace, other.trace);
}

#[test]
fn a_failing_check_fails_the_run_with_its_seed() {
    let f = Simulation::new(9)
        .duration(Duration::from_secs(6))
        .settle(Duration::from_secs(1))
        .fault_at(Duration::from_secs(5), Fault::CutWatches, Duration::ZERO)
        .check(|_| async { Err("the invariant does not hold".to_string()) })
        .run()
        .expect_err("the check fails");
    assert_eq!(f.seed, 9);
    assert!(f.reason.contains("the invariant does not hold"), "{}", f.reason);
    let shown = f.to_string();
    assert!(shown.contains("KUORUM_CHAOS_SEED=9"), "{shown}");
    assert!(shown.contains("CutWatches"), "{shown}");
}

/// kube-runtime's `Controller` (reflector, scheduler, requeues) runs inside the
/// simulation through the faults: it stamps every ConfigMap `stamp-*` with an annotation
/// naming its data, and after the faults every one carries the stamp of its last data.
fn stamper(seed: u64) -> Simulation {
    use std::sync::Arc;

    use futures::StreamExt;
    use kube::api::{Patch, PatchParams};
    use kube::runtime::controller::{Action, Controller};

    #[derive(Debug)]
    struct Failed(kube::Error);
    impl std::fmt::Display for Failed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}", self.0)
        }
    }
    impl std::error::Error for Failed {}

    async fn reconcile(cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, Failed> {
        let name = cm.metadata.name.clone().unwrap_or_default();
        if !name.starts_with("stamp-") {
            return Ok(Action::await_change());
        }
        let v = cm.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default();
        let patch = serde_json::json!({"metadata": {"annotations": {"stamped": v}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(Failed)?;
        Ok(Action::await_change())
    }

    Simulation::new(seed)
        .duration(Duration::from_secs(30))
        .faults(FaultMix::all())
        .controller("stamper", |env| async move {
            let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            Controller::new(api.clone(), Default::default())
                .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(1)), Arc::new(api))
                .for_each(|_| async {})
                .await;
            Ok(())
        })
        .workload("users", |env| async move {
            let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            for round in 0..3 {
                for i in 0..5 {
                    let patch = serde_json::json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("stamp-{i}")}, "data": {"v": format!("{round}")},
                    });
                    let params = PatchParams::apply("users").force();
                    while api.patch(&format!("stamp-{i}"), &params, &Patch::Apply(&patch)).await.is_err() {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            Ok(())
        })
        .check(|env| async move {
            let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            let list = api.list(&Default::default()).await.map_err(|e| e.to_string())?;
            let stamps: Vec<_> = list
                .items
                .iter()
                .filter(|c| c.metadata.name.as_deref().unwrap_or("").starts_with("stamp-"))
                .map(|c| {
                    let annotations = c.metadata.annotations.clone().unwrap_or_default();
                    (c.metadata.name.clone().unwrap_or_default(), annotations.get("stamped").cloned())
                })
                .collect();
            if stamps.len() != 5 || stamps.iter().any(|(_, s)| s.as_deref() != Some("2")) {
                return Err(format!("stamps after the faults: {stamps:?}"));
            }
            Ok(())
        })
}

#[test]
fn a_kube_runtime_controller_runs_in_the_simulation_and_replays() {
    let reports = kuorum_chaos::check_seeds(0..kuorum_chaos::seed_count(8), stamper);
    assert!(reports.iter().all(|r| r.faults.len() > 3));
    // The first runs, made by `check_seeds` on two threads at once (each the first on
    // its thread), take the trajectory their replays take one at a time.
    for first in reports.iter().take(2) {
        let again = stamper(first.seed).run().unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(first.trace, again.trace, "seed {} ran differently beside another run", first.seed);
    }
}
