//! CPU time, for benches that report CPU per sample or per token, and CPU placement (Linux).

/// CPU time of the whole process (every thread) since `start`.
pub struct CpuClock(f64);

impl CpuClock {
    fn now_us() -> f64 {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid, writable timespec; CLOCK_PROCESS_CPUTIME_ID exists on every
        // platform this builds for (Linux, macOS).
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
        t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
    }

    pub fn start() -> CpuClock {
        CpuClock(Self::now_us())
    }

    pub fn elapsed_us(&self) -> f64 {
        Self::now_us() - self.0
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), in order.
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, and the call writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid and writable for the size given.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads `set` for indices below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect())
}

/// Keeps the calling thread, and every thread it starts from now on (a tokio runtime's workers),
/// on `cpus`: how a bench gives a server and its client a core each, as two machines would.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: as in `allowed_cpus`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(std::io::Error::other(format!("CPU {cpu} is past the largest CPU number {}", libc::CPU_SETSIZE - 1)));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size given.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_one_allowed_cpu_runs_on_it_alone() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&[last]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
            let child = std::thread::spawn(|| allowed_cpus().unwrap()).join().unwrap();
            assert_eq!(child, vec![last], "threads started after pinning inherit it");
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(&[libc::CPU_SETSIZE as usize]).unwrap_err().to_string().contains("past the largest"));
    }
}
