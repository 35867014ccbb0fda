//! node.k8s.io

use crate::kinds::Strategy;

pub mod runtimeclass;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&runtimeclass::RuntimeClass];

#[cfg(test)]
mod tests {
    #[test]
    fn example_objects() {
        crate::kinds::networking::fixtures::check("node", 1);
    }
}
