//! Exports the simulator's `getrandom` (src/entropy.rs) from every binary and test of
//! this package, so `dlsym(RTLD_DEFAULT, "getrandom")` (how the `getrandom` crate finds
//! it, under `rand`'s thread RNG and openraft's election timeouts) resolves to it.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=getrandom");
}
