//! networking.k8s.io

use crate::kinds::Strategy;

mod addr;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod ingress;
pub mod ingressclass;
pub mod ipaddress;
pub mod networkpolicy;
pub mod servicecidr;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &ingressclass::IngressClass,
    &ingress::Ingress,
    &ipaddress::IPAddress,
    &networkpolicy::NetworkPolicy,
    &servicecidr::ServiceCIDR,
];

#[cfg(test)]
mod tests {
    #[test]
    fn example_objects() {
        super::fixtures::check("networking", 5);
    }
}
