//! apps

pub mod deployment;
