//! The cleanup of deleted CustomResourceDefinitions, which kube-apiserver's apiextensions
//! server runs in a controller and kuorum runs inside the leader: every pass hands the
//! CRDs marked for deletion to [`kuorum_rest::finalize_deleted_crds`], which deletes their
//! objects and then releases them.

use std::sync::Arc;
use std::time::Duration;

use kuorum_api::seams::Clock;
use kuorum_raft::Cluster;

const PERIOD: Duration = Duration::from_millis(500);
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

pub async fn run(cluster: Cluster, clock: Arc<dyn Clock>) {
    loop {
        tokio::time::sleep(PERIOD).await;
        if cluster.leader() != Some(cluster.node_id()) {
            continue;
        }
        if let Err(e) = kuorum_rest::finalize_deleted_crds(&cluster, clock.as_ref(), WRITE_DEADLINE).await {
            tracing::debug!("CRD cleanup: {e}");
        }
    }
}
