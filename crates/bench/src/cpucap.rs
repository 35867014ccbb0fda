//! Owns the per-server CPU caps used by the read-scaling scenario.
//!
//! On a 2-vCPU machine, three server processes and the load generator share the same two
//! cores, so spreading reads over more nodes cannot add CPU and "scaling" measures only
//! the scheduler. Capping each server process at a fixed CPU budget (its own cgroup with a
//! CFS quota) gives every node a budget of its own, the way separate machines would:
//! one node then has `cores` of CPU, three nodes have `3 × cores`, and the client keeps
//! the rest. The cap is removed (processes moved back to the root group) on drop.
//!
//! Needs the cgroup v1 `cpu` controller mounted at `/sys/fs/cgroup/cpu` (or cgroup v2 at
//! `/sys/fs/cgroup` with `cpu` enabled) and root; otherwise `apply` fails and the caller
//! reports the run as uncapped.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

/// CFS period: short, so a capped server is throttled in 2 ms slices instead of
/// stalling for most of a 100 ms default period.
const PERIOD_US: u64 = 10_000;

pub struct CpuCap {
    /// (group dir, the root group's procs file to move the pid back to, pid)
    groups: Vec<(PathBuf, PathBuf, u32)>,
}

impl CpuCap {
    /// Puts each pid (the whole process, all threads) in its own group capped at `cores`.
    pub fn apply(pids: &[u32], cores: f64) -> Result<CpuCap> {
        if cores.is_nan() || cores <= 0.0 {
            return Err(anyhow!("cpu cap must be > 0 cores"));
        }
        let quota = ((cores * PERIOD_US as f64) as u64).max(1000);
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let v2 = Path::new("/sys/fs/cgroup");
        let mut cap = CpuCap { groups: Vec::new() };
        for &pid in pids {
            let name = format!("kuorum-bench-{pid}");
            if v1.join("cpu.cfs_quota_us").exists() {
                let dir = v1.join(&name);
                mkdir(&dir)?;
                write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                write(&dir.join("cgroup.procs"), &pid.to_string())?;
                cap.groups.push((dir, v1.join("cgroup.procs"), pid));
            } else if v2.join("cgroup.controllers").exists() {
                let dir = v2.join(&name);
                mkdir(&dir)?;
                write(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
                write(&dir.join("cgroup.procs"), &pid.to_string())?;
                cap.groups.push((dir, v2.join("cgroup.procs"), pid));
            } else {
                return Err(anyhow!("no writable cgroup cpu controller under /sys/fs/cgroup"));
            }
        }
        Ok(cap)
    }

    /// CPU seconds each group was throttled for (cgroup v1 `throttled_time`, in ns); a
    /// check that the cap actually bound.
    pub fn throttled_s(&self) -> f64 {
        self.groups
            .iter()
            .filter_map(|(dir, _, _)| fs::read_to_string(dir.join("cpu.stat")).ok())
            .flat_map(|s| {
                s.lines()
                    .filter_map(|l| {
                        let (k, v) = l.split_once(' ')?;
                        match k {
                            "throttled_time" => v.parse::<f64>().ok().map(|ns| ns / 1e9),
                            "throttled_usec" => v.parse::<f64>().ok().map(|us| us / 1e6),
                            _ => None,
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .sum()
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        for (dir, root_procs, pid) in self.groups.drain(..) {
            let _ = fs::write(&root_procs, pid.to_string());
            let _ = fs::remove_dir(&dir);
        }
    }
}

fn mkdir(dir: &Path) -> Result<()> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("mkdir {}", dir.display())),
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("write {value} to {}", path.display()))
}
