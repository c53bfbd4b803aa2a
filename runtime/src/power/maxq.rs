//! The MaxQ power state: the selected MaxQ configs' `power_limit` applied to every GPU through NVML
//! (NVIDIA's `make power_set_maxq_state`, which runs `nvidia-smi -pl <W>`), the limits it replaced
//! recorded beside the runs so that `power_restore_state` puts them back, and the check a power
//! measurement makes before it starts: ranging and testing must run in the state the config says.

use super::error::PowerError;
use crate::select::Selected;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The record's file name, under the log directory.
pub const RECORD: &str = "power_state.json";

/// The GPUs' power limits, in milliwatts as NVML counts them.
pub trait PowerControl {
    fn gpu_count(&self) -> Result<u32, PowerError>;
    fn limit_mw(&self, gpu: u32) -> Result<u32, PowerError>;
    fn set_limit_mw(&mut self, gpu: u32, milliwatts: u32) -> Result<(), PowerError>;
    /// The lowest and highest limit the card accepts.
    fn range_mw(&self, gpu: u32) -> Result<(u32, u32), PowerError>;
}

/// The power limit the selection asks for and the configs that ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub watts: u64,
    pub from: String,
}

impl Target {
    fn milliwatts(&self) -> u64 {
        self.watts * 1000
    }
}

/// The one power limit of the selected configs that set one (MaxQ workloads must, MaxP ones must
/// not); refused when none does or when they disagree.
pub fn target(system: &str, configs: &[Selected]) -> Result<Target, PowerError> {
    let limited: Vec<(String, u64)> = configs.iter().filter_map(|s| Some((s.label(), s.settings.power_limit?))).collect();
    let Some((_, watts)) = limited.first() else {
        let selected: Vec<String> = configs.iter().map(Selected::label).collect();
        return Err(PowerError::NoPowerLimit { system: system.to_string(), selected: if selected.is_empty() { "none".into() } else { selected.join(", ") } });
    };
    if limited.iter().any(|(_, w)| w != watts) {
        return Err(PowerError::ConflictingLimits { limits: limited.iter().map(|(label, w)| format!("{label}: {w} W")).collect() });
    }
    Ok(Target { watts: *watts, from: limited.iter().map(|(label, _)| label.as_str()).collect::<Vec<_>>().join(", ") })
}

/// What `power_set_maxq_state` set and what it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub watts: u64,
    pub from: String,
    pub gpus: Vec<GpuLimit>,
}

/// One GPU's limit before the MaxQ state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuLimit {
    pub gpu: u32,
    pub previous_mw: u32,
}

impl Record {
    /// The record at `path`, None when there is none.
    pub fn read(path: &Path) -> Result<Option<Record>, PowerError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(PowerError::Read { path: path.to_path_buf(), source }),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| PowerError::BadRecord { path: path.to_path_buf(), message: e.to_string() })
    }
}

/// Applies `target` to every GPU after checking it against each card's range, recording first
/// what it replaces (a record left by an earlier set that was not restored keeps the limits from
/// before it). A GPU that refuses the limit puts the ones already set back.
pub fn set_maxq_state(control: &mut dyn PowerControl, target: &Target, record_path: &Path) -> Result<Record, PowerError> {
    let count = control.gpu_count()?;
    if count == 0 {
        return Err(PowerError::Nvml { op: "device count", gpu: None, message: "no GPU found".into(), permission: false });
    }
    for gpu in 0..count {
        let (min, max) = control.range_mw(gpu)?;
        if !(u64::from(min)..=u64::from(max)).contains(&target.milliwatts()) {
            return Err(PowerError::OutOfRange { gpu, watts: target.watts, min_w: f64::from(min) / 1000.0, max_w: f64::from(max) / 1000.0, from: target.from.clone() });
        }
    }
    let earlier = Record::read(record_path)?;
    let gpus = match &earlier {
        Some(record) if record.gpus.len() == count as usize => record.gpus.clone(),
        Some(record) => {
            return Err(PowerError::BadRecord { path: record_path.to_path_buf(), message: format!("it holds {} GPUs, NVML sees {count}", record.gpus.len()) });
        }
        None => (0..count).map(|gpu| Ok(GpuLimit { gpu, previous_mw: control.limit_mw(gpu)? })).collect::<Result<_, PowerError>>()?,
    };
    let record = Record { watts: target.watts, from: target.from.clone(), gpus };
    let json = serde_json::to_string_pretty(&record).expect("a record serializes");
    crate::fsutil::write_atomic(record_path, json.as_bytes())?;
    let milliwatts = u32::try_from(target.milliwatts()).expect("within the card's range, which is u32");
    for (done, limit) in record.gpus.iter().enumerate() {
        if let Err(e) = control.set_limit_mw(limit.gpu, milliwatts) {
            // Best effort: the error that stops the command is the refusal, not a failed put-back.
            for earlier_gpu in &record.gpus[..done] {
                let _ = control.set_limit_mw(earlier_gpu.gpu, earlier_gpu.previous_mw);
            }
            if earlier.is_none() {
                let _ = std::fs::remove_file(record_path);
            }
            return Err(e);
        }
    }
    Ok(record)
}

/// Puts back the limits the record holds and removes it; the record stays when a GPU refuses.
pub fn restore_state(control: &mut dyn PowerControl, record_path: &Path) -> Result<Record, PowerError> {
    let record = Record::read(record_path)?.ok_or_else(|| PowerError::NoRecord { path: record_path.to_path_buf() })?;
    for limit in &record.gpus {
        control.set_limit_mw(limit.gpu, limit.previous_mw)?;
    }
    std::fs::remove_file(record_path).map_err(|source| PowerError::Read { path: record_path.to_path_buf(), source })?;
    Ok(record)
}

/// Refuses when a GPU's limit is not the target's (checked before a power measurement starts).
pub fn check_state(control: &dyn PowerControl, target: &Target) -> Result<(), PowerError> {
    for gpu in 0..control.gpu_count()? {
        let current = control.limit_mw(gpu)?;
        if u64::from(current) != target.milliwatts() {
            return Err(PowerError::StateDiffers { gpu, current_w: f64::from(current) / 1000.0, want_w: target.watts, from: target.from.clone() });
        }
    }
    Ok(())
}

/// The GPUs' limits through NVML, loaded at run time (nvml-wrapper loads libnvidia-ml.so.1 with
/// libloading, so the binary runs where there is none until this is used).
pub struct Nvml(nvml_wrapper::Nvml);

fn nvml_error(op: &'static str, gpu: Option<u32>) -> impl FnOnce(nvml_wrapper::error::NvmlError) -> PowerError {
    move |e| PowerError::Nvml { op, gpu, permission: matches!(e, nvml_wrapper::error::NvmlError::NoPermission), message: e.to_string() }
}

impl Nvml {
    pub fn open() -> Result<Nvml, PowerError> {
        nvml_wrapper::Nvml::init().map(Nvml).map_err(nvml_error("init (is the NVIDIA driver installed?)", None))
    }

    fn device(&self, gpu: u32) -> Result<nvml_wrapper::Device<'_>, PowerError> {
        self.0.device_by_index(gpu).map_err(nvml_error("device", Some(gpu)))
    }
}

impl PowerControl for Nvml {
    fn gpu_count(&self) -> Result<u32, PowerError> {
        self.0.device_count().map_err(nvml_error("device count", None))
    }

    fn limit_mw(&self, gpu: u32) -> Result<u32, PowerError> {
        self.device(gpu)?.power_management_limit().map_err(nvml_error("power limit", Some(gpu)))
    }

    fn set_limit_mw(&mut self, gpu: u32, milliwatts: u32) -> Result<(), PowerError> {
        self.device(gpu)?.set_power_management_limit(milliwatts).map_err(nvml_error("set power limit", Some(gpu)))
    }

    fn range_mw(&self, gpu: u32) -> Result<(u32, u32), PowerError> {
        let c = self.device(gpu)?.power_management_limit_constraints().map_err(nvml_error("power limit range", Some(gpu)))?;
        Ok((c.min_limit, c.max_limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::fixture::tempdir;

    /// GPUs whose limits live in memory; `refuse` makes a set on that GPU fail as NVML does without root.
    struct Fake {
        limits: Vec<u32>,
        range: (u32, u32),
        refuse: Option<u32>,
    }

    impl PowerControl for Fake {
        fn gpu_count(&self) -> Result<u32, PowerError> {
            Ok(self.limits.len() as u32)
        }
        fn limit_mw(&self, gpu: u32) -> Result<u32, PowerError> {
            Ok(self.limits[gpu as usize])
        }
        fn set_limit_mw(&mut self, gpu: u32, milliwatts: u32) -> Result<(), PowerError> {
            if self.refuse == Some(gpu) {
                return Err(PowerError::Nvml { op: "set power limit", gpu: Some(gpu), message: "Insufficient Permissions".into(), permission: true });
            }
            self.limits[gpu as usize] = milliwatts;
            Ok(())
        }
        fn range_mw(&self, _: u32) -> Result<(u32, u32), PowerError> {
            Ok(self.range)
        }
    }

    fn h200s() -> Fake {
        Fake { limits: vec![700_000, 690_000], range: (200_000, 700_000), refuse: None }
    }

    fn limit(watts: u64) -> Target {
        Target { watts, from: "resnet50/Offline/MaxQ".into() }
    }

    #[test]
    fn set_records_the_previous_limits_and_restore_puts_them_back() {
        let record = tempdir("maxq-set").join(RECORD);
        let mut gpus = h200s();
        let set = set_maxq_state(&mut gpus, &limit(350), &record).unwrap();
        assert_eq!(gpus.limits, [350_000, 350_000]);
        assert_eq!(set.gpus, [GpuLimit { gpu: 0, previous_mw: 700_000 }, GpuLimit { gpu: 1, previous_mw: 690_000 }]);
        assert_eq!(Record::read(&record).unwrap(), Some(set.clone()));
        check_state(&gpus, &limit(350)).unwrap();
        // Set again (another limit) without restoring: the record keeps the limits from before the first.
        set_maxq_state(&mut gpus, &limit(300), &record).unwrap();
        assert_eq!(Record::read(&record).unwrap().unwrap().gpus, set.gpus);
        let restored = restore_state(&mut gpus, &record).unwrap();
        assert_eq!(restored.watts, 300);
        assert_eq!(gpus.limits, [700_000, 690_000]);
        assert!(!record.exists());
        let e = restore_state(&mut gpus, &record).unwrap_err();
        assert!(matches!(e, PowerError::NoRecord { .. }), "{e}");
    }

    #[test]
    fn a_limit_outside_the_cards_range_is_refused_before_anything_changes() {
        let record = tempdir("maxq-range").join(RECORD);
        let mut gpus = h200s();
        for watts in [150, 701] {
            let e = set_maxq_state(&mut gpus, &limit(watts), &record).unwrap_err();
            assert!(matches!(e, PowerError::OutOfRange { gpu: 0, .. }), "{e}");
            assert!(e.to_string().contains("outside the card's range 200..700 W"), "{e}");
            assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::CONFIG);
        }
        assert_eq!(gpus.limits, [700_000, 690_000]);
        assert!(!record.exists());
    }

    #[test]
    fn a_gpu_that_refuses_puts_the_others_back() {
        let record = tempdir("maxq-refuse").join(RECORD);
        let mut gpus = Fake { refuse: Some(1), ..h200s() };
        let e = set_maxq_state(&mut gpus, &limit(350), &record).unwrap_err();
        assert!(e.to_string().contains("GPU 1") && e.to_string().contains("needs root"), "{e}");
        assert_eq!(gpus.limits, [700_000, 690_000]);
        assert!(!record.exists());
    }

    #[test]
    fn check_state_refuses_a_limit_other_than_the_configs() {
        let gpus = Fake { limits: vec![350_000, 700_000], ..h200s() };
        let e = check_state(&gpus, &limit(350)).unwrap_err();
        assert!(matches!(e, PowerError::StateDiffers { gpu: 1, want_w: 350, .. }), "{e}");
        assert!(e.to_string().contains("power limit 700 W, but the config wants 350 W (resnet50/Offline/MaxQ)"), "{e}");
        assert!(e.to_string().contains("power_set_maxq_state"), "{e}");
    }

    #[test]
    fn a_corrupt_record_is_refused_with_what_to_do() {
        let record = tempdir("maxq-corrupt").join(RECORD);
        std::fs::write(&record, "{\"watts\": ").unwrap();
        let e = restore_state(&mut h200s(), &record).unwrap_err();
        assert!(matches!(e, PowerError::BadRecord { .. }) && e.to_string().contains("nvidia-smi -pl"), "{e}");
        assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::DATA);
    }

    /// On a GPU machine: NVML reads every GPU's limit and range, and check_state holds for the
    /// limit in force. Changing a machine's power limit needs its owner's consent: only with
    /// `MLPERF_NVML_SET=1` (and root), power_set_maxq_state at the card's lowest limit, check_state,
    /// then power_restore_state puts the first limits back.
    /// `MLPERF_NVML_SET=1 cargo test --release -p mlperf-runtime --lib -- --ignored nvml_sets_and_restores`.
    #[test]
    #[ignore = "needs an NVIDIA GPU (and root and MLPERF_NVML_SET=1 to set limits)"]
    fn nvml_sets_and_restores_the_power_limit_where_permitted() {
        let mut nvml = Nvml::open().unwrap();
        let before: Vec<u32> = (0..nvml.gpu_count().unwrap()).map(|g| nvml.limit_mw(g).unwrap()).collect();
        let (min, max) = nvml.range_mw(0).unwrap();
        eprintln!("GPU limits {before:?} mW, GPU 0 range {min}..{max} mW");
        assert!(!before.is_empty() && min <= before[0] && before[0] <= max);
        let current = Target { watts: u64::from(before[0]) / 1000, from: "the limit in force".into() };
        if before.iter().all(|&mw| mw == before[0] && mw % 1000 == 0) {
            check_state(&nvml, &current).unwrap();
        }
        let lowest = Target { watts: u64::from(min).div_ceil(1000), from: "the card's lowest limit".into() };
        if lowest.watts != current.watts {
            assert!(check_state(&nvml, &lowest).is_err(), "check_state accepted {} W with {before:?} mW in force", lowest.watts);
        }
        if std::env::var("MLPERF_NVML_SET").as_deref() != Ok("1") {
            eprintln!("read only (MLPERF_NVML_SET=1 also sets and restores the limit)");
            return;
        }
        let record = tempdir("maxq-nvml").join(RECORD);
        match set_maxq_state(&mut nvml, &lowest, &record) {
            Ok(set) => {
                check_state(&nvml, &lowest).unwrap();
                assert_eq!(set.gpus.iter().map(|g| g.previous_mw).collect::<Vec<_>>(), before);
                restore_state(&mut nvml, &record).unwrap();
                assert_eq!((0..before.len() as u32).map(|g| nvml.limit_mw(g).unwrap()).collect::<Vec<_>>(), before);
            }
            Err(e @ PowerError::Nvml { permission: true, .. }) => {
                eprintln!("not permitted here, nothing changed: {e}");
                assert!(!record.exists());
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// A config of the H200 system: `benchmark`, Offline, MaxQ when it has a power limit.
    fn selected(benchmark: &'static str, power_limit: Option<u64>) -> Selected {
        use mlperf_config::{CompiledConfig, Origin, PowerSetting, Scenario, Settings, Workload};
        let power = if power_limit.is_some() { PowerSetting::MaxQ } else { PowerSetting::MaxP };
        let config = CompiledConfig {
            system: "H200-SXM-141GBx8".into(),
            benchmark: benchmark.into(),
            scenario: Scenario::Offline,
            workload: Workload { power, ..Workload::default() },
            rounds: Default::default(),
            settings: Settings { power_limit, ..Settings::default() },
            provenance: Default::default(),
            defined_at: Origin { file: "configs/x.toml".into(), line: 1, col: 1 },
        };
        let config: &'static CompiledConfig = Box::leak(Box::new(config));
        Selected { config, settings: config.settings.clone() }
    }

    #[test]
    fn the_target_is_the_one_limit_of_the_selected_maxq_configs() {
        let resnet = [selected("resnet50", Some(350)), selected("resnet50", None), selected("retinanet", Some(350))];
        let t = target("H200-SXM-141GBx8", &resnet).unwrap();
        assert_eq!(t.watts, 350);
        assert!(t.from.contains("resnet50/Offline/") && t.from.contains("retinanet/Offline/"), "{}", t.from);
        let e = target("H200-SXM-141GBx8", &[selected("resnet50", None)]).unwrap_err();
        assert!(matches!(e, PowerError::NoPowerLimit { .. }) && e.to_string().contains("--power_setting MaxQ"), "{e}");
        let e = target("H200-SXM-141GBx8", &[selected("resnet50", Some(350)), selected("dlrm-v2", Some(500))]).unwrap_err();
        assert!(matches!(e, PowerError::ConflictingLimits { .. }) && e.to_string().contains("350 W") && e.to_string().contains("500 W"), "{e}");
        assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::CONFIG);
    }
}
