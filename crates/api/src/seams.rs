//! The seams through which a node learns the time and draws randomness. Production passes
//! the system clock and an OS-seeded RNG; the simulator passes its own, seeded from the run's
//! seed, so every value a node writes into an object is reproducible.

use std::sync::Mutex;

/// Wall-clock time, as Kubernetes writes it into objects.
pub trait Clock: Send + Sync + 'static {
    /// Seconds since the Unix epoch.
    fn now_unix_seconds(&self) -> i64;

    /// The time as RFC 3339 with second precision in UTC, e.g. `2026-11-21T23:45:28Z`.
    fn now_rfc3339(&self) -> String {
        crate::time::format(self.now_unix_seconds())
    }
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_seconds(&self) -> i64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
    }
}

/// A source of random 64-bit values.
pub trait Entropy: Send + Sync + 'static {
    fn next_u64(&self) -> u64;
}

/// A small deterministic generator (splitmix64): the simulator seeds one per node, and
/// production seeds one from the OS at start-up. Not for secrets.
#[derive(Debug)]
pub struct SplitMix64(Mutex<u64>);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(Mutex::new(seed))
    }

    /// Seeded from the clock and the process id: distinct per process, good enough for
    /// uids and name suffixes (which are not secrets).
    pub fn from_os() -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Self::new(t ^ ((std::process::id() as u64) << 32))
    }
}

impl Entropy for SplitMix64 {
    fn next_u64(&self) -> u64 {
        splitmix64_step(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// One step of splitmix64: advances `state` and returns the next value.
pub fn splitmix64_step(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A version-4 UUID drawn from `e`, as Kubernetes uids look.
pub fn new_uid(e: &dyn Entropy) -> String {
    let a = e.next_u64();
    let b = e.next_u64();
    let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
    let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFFF,
        b >> 48,
        b & 0xFFFF_FFFF_FFFF
    )
}

/// The 5-character suffix kube-apiserver appends to `generateName`: lowercase
/// consonants and digits (no vowels, so no words).
pub fn name_suffix(e: &dyn Entropy) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut v = e.next_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(v % ALPHABET.len() as u64) as usize] as char;
            v /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_and_suffixes_are_deterministic_per_seed() {
        let (a, b) = (SplitMix64::new(7), SplitMix64::new(7));
        let u = new_uid(&a);
        assert_eq!(u, new_uid(&b));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4", "version 4");
        let s = name_suffix(&a);
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
        assert_ne!(new_uid(&SplitMix64::new(8)), new_uid(&SplitMix64::new(9)));
    }
}
