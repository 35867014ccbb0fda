//! The one binary encoding for everything kuorum stores or sends that is not a
//! Kubernetes object: log entries, votes, snapshot metadata, peer messages (bincode).

use serde::de::DeserializeOwned;
use serde::Serialize;

pub fn encode<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    // bincode cannot fail on the in-memory types it is given here (no maps with
    // non-string keys restrictions, no length limits configured).
    bincode::serialize(v).expect("bincode encodes in-memory values")
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> std::io::Result<T> {
    bincode::deserialize(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
