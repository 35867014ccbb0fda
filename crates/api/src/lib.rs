//! Kubernetes API types and machinery that kuorum serves, free of any transport or
//! storage: the seams through which a node gets time and randomness ([`seams`]).

pub mod seams;
