//! Exports the simulator's `getrandom` and `clock_gettime` (src/entropy.rs) from every
//! binary and test of this package, so `dlsym(RTLD_DEFAULT, "getrandom")` (how the
//! `getrandom` crate finds it, under `rand`'s thread RNG and openraft's election
//! timeouts) and any dynamic lookup of the clock resolve to them.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=getrandom");
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=clock_gettime");
}
