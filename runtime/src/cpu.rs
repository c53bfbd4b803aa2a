//! CPU time, for benches that report CPU per sample or per token.

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
