//! openraft's own storage test suite, run over kuorum's adaptors on the in-memory engines.
//! (`kuorum-store-rocks` runs the same suite over the RocksDB engines.)

use std::sync::Arc;

use kuorum_raft::log_store::LogStore;
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::types::TypeConfig;
use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;

struct MemoryBuilder;

impl StoreBuilder<TypeConfig, LogStore<MemoryLogEngine>, StateMachine<MemoryObjectEngine>, ()> for MemoryBuilder {
    async fn build(
        &self,
    ) -> Result<((), LogStore<MemoryLogEngine>, StateMachine<MemoryObjectEngine>), StorageError<TypeConfig>> {
        let log = LogStore::new(Arc::new(MemoryLogEngine::new()));
        let sm = StateMachine::new(Arc::new(MemoryObjectEngine::new())).expect("state machine");
        Ok(((), log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_storage_suite_passes_on_memory_engines() {
    Suite::test_all(MemoryBuilder).await.expect("openraft storage suite");
}
