//! openraft's own storage test suite, run over kuorum-raft's adaptors on the RocksDB
//! engines (kuorum-raft runs it on the in-memory engines).

use std::sync::Arc;

use kuorum_raft::log_store::LogStore;
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::types::TypeConfig;
use kuorum_store_rocks::{RocksLogEngine, RocksObjectEngine, RocksStore};
use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;
use tempfile::TempDir;

/// Each build opens one RocksDB in a fresh directory; the directory is the guard, removed
/// when the suite drops it after the stores.
struct RocksBuilder;

impl StoreBuilder<TypeConfig, LogStore<RocksLogEngine>, StateMachine<RocksObjectEngine>, TempDir> for RocksBuilder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore<RocksLogEngine>, StateMachine<RocksObjectEngine>), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RocksStore::open(&dir.path().join("db")).expect("open rocksdb");
        let log = LogStore::new(Arc::new(store.log_engine()));
        let sm = StateMachine::new(Arc::new(store.object_engine())).expect("state machine");
        Ok((dir, log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_storage_suite_passes_on_rocksdb_engines() {
    Suite::test_all(RocksBuilder).await.expect("openraft storage suite");
}
