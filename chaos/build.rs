//! Exports the simulator's `getrandom` and `clock_gettime` (kuorum-sim's entropy module)
//! from this package's tests and examples, so every library on a simulated host draws
//! its randomness from the run's seed and reads a clock that stands still (the
//! simulated time is tokio's). A crate using kuorum-chaos in its own tests needs these
//! two lines in its own build.rs (docs/chaos.md).
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=getrandom");
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=clock_gettime");
}
