//! The harness itself: kube-rs clients reach the simulated cluster through faults, a
//! seed replays the same run (same faults, same applied history), and every kind of
//! check can fail a run.

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
