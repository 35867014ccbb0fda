//! scheduling.k8s.io

use crate::kinds::Strategy;

pub mod priorityclass;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&priorityclass::PriorityClass];

#[cfg(test)]
mod tests {
    #[test]
    fn example_objects() {
        crate::kinds::networking::fixtures::check("scheduling", 1);
    }
}
