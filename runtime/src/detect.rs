//! Hardware detection and matching against the compiled systems.
//!
//! Detection reads the CPU architecture and vendor, host memory (/proc/meminfo) and every GPU's
//! name, PCI device id, memory and power limit: through NVML (`libnvidia-ml.so.1`, loaded at run
//! time, so a machine without the driver builds and runs), else from `nvidia-smi` when NVML cannot
//! be loaded; with neither, the machine has no GPU. Matching follows
//! NVIDIA's rules (CPU architecture and vendor, >= 95 % of the memory floor, exact GPU count, PCI id,
//! GPU memory and TDP within 5 %) but explains every mismatch instead of failing late.

use mlperf_config::SystemInfo;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Command;

/// Environment variable naming a JSON file to use instead of probing (machines without nvidia-smi,
/// tests, and reproducing a user's report).
pub const HARDWARE_OVERRIDE_ENV: &str = "MLPERF_HARDWARE_JSON";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectedGpu {
    pub name: String,
    /// Hex device id without the vendor part, e.g. "2330".
    pub pci_device_id: String,
    pub memory_gib: f64,
    pub max_power_w: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectedHardware {
    pub cpu_arch: String,
    pub cpu_vendor: Option<String>,
    pub host_memory_gib: f64,
    pub gpus: Vec<DetectedGpu>,
    /// Where the description came from (probe or override file).
    #[serde(default)]
    pub source: String,
}

impl DetectedHardware {
    /// NVIDIA's id for an unknown machine: `UNREGISTERED_<arch>_<first GPU name>x<count>`.
    pub fn unregistered_id(&self) -> String {
        let gpu = self.gpus.first().map_or_else(|| "NoGPU".to_string(), |g| g.name.replace(' ', "_"));
        format!("UNREGISTERED_{}_{}x{}", self.cpu_arch, gpu, self.gpus.len())
    }
}

/// Why the machine could not be described.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    /// The override file cannot be read.
    #[error("{HARDWARE_OVERRIDE_ENV}={}: {source}", .path.display())]
    OverrideUnreadable { path: PathBuf, source: std::io::Error },
    /// The override file is not a hardware description.
    #[error("{HARDWARE_OVERRIDE_ENV}={}: not a hardware description: {source}", .path.display())]
    OverrideInvalid { path: PathBuf, source: serde_json::Error },
    /// `nvidia-smi` is there but failed.
    #[error("nvidia-smi is installed but failed ({status}): {stderr}; fix the driver or describe the machine in a file named by {HARDWARE_OVERRIDE_ENV}")]
    SmiFailed { status: std::process::ExitStatus, stderr: String },
}

impl From<DetectError> for crate::Error {
    fn from(e: DetectError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Probes this machine, or reads the override file when `MLPERF_HARDWARE_JSON` is set.
pub fn detect() -> Result<DetectedHardware, DetectError> {
    if let Some(path) = std::env::var_os(HARDWARE_OVERRIDE_ENV) {
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|source| DetectError::OverrideUnreadable { path: path.clone(), source })?;
        let mut hw: DetectedHardware = serde_json::from_str(&text).map_err(|source| DetectError::OverrideInvalid { path: path.clone(), source })?;
        hw.source = format!("{HARDWARE_OVERRIDE_ENV}={}", path.display());
        return Ok(hw);
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_vendor = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("vendor_id").map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string()))
        .or_else(|| cpuinfo.lines().any(|l| l.starts_with("CPU implementer")).then(|| "ARM".to_string()));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let host_memory_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / (1024.0 * 1024.0));
    let (gpus, how) = match nvml_gpus() {
        Ok(gpus) => (gpus, "NVML"),
        Err(e) => {
            tracing::debug!("NVML unavailable ({e}); asking nvidia-smi");
            (smi_gpus()?, "nvidia-smi")
        }
    };
    Ok(DetectedHardware { cpu_arch: std::env::consts::ARCH.to_string(), cpu_vendor, host_memory_gib, gpus, source: format!("probe (/proc, {how})") })
}

/// The GPUs NVML reports; an error when NVML cannot be loaded or initialised (then `nvidia-smi` is
/// asked, so the error is only logged).
fn nvml_gpus() -> Result<Vec<DetectedGpu>, nvml_wrapper::error::NvmlError> {
    let nvml = nvml_wrapper::Nvml::init()?;
    let count = nvml.device_count()?;
    (0..count)
        .map(|i| {
            let device = nvml.device_by_index(i)?;
            let pci = device.pci_info()?;
            Ok(DetectedGpu {
                name: device.name()?,
                // The device id in the upper 16 bits, the vendor (10DE) in the lower, as nvidia-smi shows it.
                pci_device_id: format!("{:04X}", pci.pci_device_id >> 16),
                memory_gib: device.memory_info()?.total as f64 / (1u64 << 30) as f64,
                max_power_w: device.power_management_limit_constraints().ok().map(|c| f64::from(c.max_limit) / 1000.0),
            })
        })
        .collect()
}

fn smi_gpus() -> Result<Vec<DetectedGpu>, DetectError> {
    let output = match Command::new("nvidia-smi").args(["--query-gpu=name,pci.device_id,memory.total,power.max_limit", "--format=csv,noheader,nounits"]).output() {
        Ok(o) => o,
        Err(_) => return Ok(Vec::new()), // no driver tools: a CPU-only machine
    };
    if !output.status.success() {
        return Err(DetectError::SmiFailed { status: output.status, stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() });
    }
    Ok(String::from_utf8_lossy(&output.stdout).lines().filter(|l| !l.trim().is_empty()).map(parse_smi_line).collect())
}

/// One line of `nvidia-smi --query-gpu=name,pci.device_id,memory.total,power.max_limit` (MiB, W).
pub fn parse_smi_line(line: &str) -> DetectedGpu {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let device = fields.get(1).copied().unwrap_or("");
    // "0x233010DE": device id in the upper 16 bits, vendor 10DE in the lower.
    let hex = device.trim_start_matches("0x").trim_start_matches("0X");
    let pci_device_id = if hex.len() == 8 { hex[..4].to_uppercase() } else { hex.to_uppercase() };
    DetectedGpu {
        name: fields.first().copied().unwrap_or("").to_string(),
        pci_device_id,
        memory_gib: fields.get(2).and_then(|v| v.parse::<f64>().ok()).map_or(0.0, |mib| mib / 1024.0),
        max_power_w: fields.get(3).and_then(|v| v.parse().ok()),
    }
}

/// Why a system does not describe the detected hardware (empty = it matches).
pub fn mismatches(hw: &DetectedHardware, system: &SystemInfo) -> Vec<String> {
    let id = &system.hardware;
    let mut why = Vec::new();
    if id.cpu_arch != "any" && id.cpu_arch != hw.cpu_arch {
        why.push(format!("CPU architecture is {}, {} needs {}", hw.cpu_arch, system.id, id.cpu_arch));
    }
    if let (Some(want), Some(have)) = (&id.cpu_vendor, &hw.cpu_vendor)
        && want != have
    {
        why.push(format!("CPU vendor is {have}, {} needs {want}", system.id));
    }
    let floor = id.host_memory_gib as f64 * 0.95;
    if hw.host_memory_gib < floor {
        why.push(format!("host memory is {:.0} GiB, {} needs at least {floor:.0} GiB (95 % of {} GiB)", hw.host_memory_gib, system.id, id.host_memory_gib));
    }
    if hw.gpus.len() as u64 != id.gpus_per_node {
        why.push(format!("{} GPUs detected, {} has {} per node", hw.gpus.len(), system.id, id.gpus_per_node));
    }
    if let Some(gpu) = &id.gpu {
        for (i, found) in hw.gpus.iter().enumerate() {
            if !gpu.pci_device_ids.iter().any(|p| p.eq_ignore_ascii_case(&found.pci_device_id)) {
                why.push(format!("GPU {i} is {} (PCI {}), {} needs {} (PCI {})", found.name, found.pci_device_id, system.id, gpu.name, gpu.pci_device_ids.join("/")));
                continue;
            }
            if (found.memory_gib - gpu.memory_gib as f64).abs() > gpu.memory_gib as f64 * 0.05 {
                why.push(format!("GPU {i} has {:.1} GiB, {} needs {} GiB +-5 %", found.memory_gib, system.id, gpu.memory_gib));
            }
            if let Some(power) = found.max_power_w
                && (power - gpu.tdp_w as f64).abs() > gpu.tdp_w as f64 * 0.05
            {
                why.push(format!("GPU {i} power limit is {power:.0} W, {} needs {} W +-5 %", system.id, gpu.tdp_w));
            }
        }
    }
    why
}

/// The outcome of matching detected hardware against the compiled systems.
#[derive(Debug)]
pub enum SystemMatch<'a> {
    Matched(&'a SystemInfo),
    /// No system matches: the closest one (fewest mismatches) and why it did not match.
    Unmatched {
        unregistered_id: String,
        nearest: Option<(&'a SystemInfo, Vec<String>)>,
    },
}

pub fn match_system<'a>(hw: &DetectedHardware, systems: &'a [SystemInfo]) -> SystemMatch<'a> {
    let mut scored: Vec<(&SystemInfo, Vec<String>)> = systems.iter().map(|s| (s, mismatches(hw, s))).collect();
    // Prefer an exact match with GPUs over the catch-all CPU system.
    if let Some((s, _)) = scored.iter().filter(|(_, why)| why.is_empty()).max_by_key(|(s, _)| s.hardware.gpus_per_node) {
        return SystemMatch::Matched(s);
    }
    scored.sort_by_key(|(_, why)| why.len());
    SystemMatch::Unmatched { unregistered_id: hw.unregistered_id(), nearest: scored.into_iter().next() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nvidia_smi_csv() {
        let gpu = parse_smi_line("NVIDIA H100 80GB HBM3, 0x233010DE, 81559, 700.00");
        assert_eq!(gpu.pci_device_id, "2330");
        assert!((gpu.memory_gib - 79.65).abs() < 0.01);
        assert_eq!(gpu.max_power_w, Some(700.0));
    }

    #[test]
    fn unregistered_ids_follow_nvidia() {
        let hw = DetectedHardware {
            cpu_arch: "x86_64".into(),
            cpu_vendor: None,
            host_memory_gib: 64.0,
            gpus: vec![parse_smi_line("NVIDIA L40S, 0x26B910DE, 46068, 350.00")],
            source: String::new(),
        };
        assert_eq!(hw.unregistered_id(), "UNREGISTERED_x86_64_NVIDIA_L40Sx1");
    }
}
