//! The built-in catalogue of common SageMaker instance types.
//!
//! Shapes are public AWS figures (accelerator devices, GiB per device, vCPUs, host memory).
//! Prices are deliberately absent: they vary by region and date, so a scenario that wants cost
//! to mean dollars supplies `HourlyPrice` in `InstanceTypes`.

/// One built-in instance type: (name, accelerators, accelerator GiB, vCPUs, memory GiB).
type Row = (&'static str, u32, u32, u32, u32);

const ROWS: &[Row] = &[
    ("ml.p5.48xlarge", 8, 80, 192, 2048),
    ("ml.p5e.48xlarge", 8, 141, 192, 2048),
    ("ml.p5en.48xlarge", 8, 141, 192, 2048),
    ("ml.p4d.24xlarge", 8, 40, 96, 1152),
    ("ml.p4de.24xlarge", 8, 80, 96, 1152),
    ("ml.g5.xlarge", 1, 24, 4, 16),
    ("ml.g5.2xlarge", 1, 24, 8, 32),
    ("ml.g5.4xlarge", 1, 24, 16, 64),
    ("ml.g5.8xlarge", 1, 24, 32, 128),
    ("ml.g5.12xlarge", 4, 24, 48, 192),
    ("ml.g5.16xlarge", 1, 24, 64, 256),
    ("ml.g5.24xlarge", 4, 24, 96, 384),
    ("ml.g5.48xlarge", 8, 24, 192, 768),
    ("ml.g6.xlarge", 1, 24, 4, 16),
    ("ml.g6.2xlarge", 1, 24, 8, 32),
    ("ml.g6.4xlarge", 1, 24, 16, 64),
    ("ml.g6.8xlarge", 1, 24, 32, 128),
    ("ml.g6.12xlarge", 4, 24, 48, 192),
    ("ml.g6.16xlarge", 1, 24, 64, 256),
    ("ml.g6.24xlarge", 4, 24, 96, 384),
    ("ml.g6.48xlarge", 8, 24, 192, 768),
    ("ml.g6e.xlarge", 1, 48, 4, 32),
    ("ml.g6e.2xlarge", 1, 48, 8, 64),
    ("ml.g6e.4xlarge", 1, 48, 16, 128),
    ("ml.g6e.8xlarge", 1, 48, 32, 256),
    ("ml.g6e.12xlarge", 4, 48, 48, 384),
    ("ml.g6e.16xlarge", 1, 48, 64, 512),
    ("ml.g6e.24xlarge", 4, 48, 96, 768),
    ("ml.g6e.48xlarge", 8, 48, 192, 1536),
    ("ml.inf2.xlarge", 1, 32, 4, 16),
    ("ml.inf2.8xlarge", 1, 32, 32, 128),
    ("ml.inf2.24xlarge", 6, 32, 96, 384),
    ("ml.inf2.48xlarge", 12, 32, 192, 768),
];

/// The built-in catalogue as [`crate::InstanceTypeSpec`]s (no prices).
pub fn builtin_instance_types() -> Vec<crate::InstanceTypeSpec> {
    ROWS.iter()
        .map(|&(name, accelerators, accelerator_gib, vcpus, memory_gib)| crate::InstanceTypeSpec {
            instance_type: name.to_string(),
            accelerator_count: accelerators,
            accelerator_memory_gib: f64::from(accelerator_gib),
            v_cpu_count: f64::from(vcpus),
            memory_in_mb: f64::from(memory_gib) * 1024.0,
            hourly_price: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_names_are_unique_and_cover_the_families() {
        let types = builtin_instance_types();
        let mut names: Vec<&str> = types.iter().map(|t| t.instance_type.as_str()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        for family in ["ml.p5.", "ml.p4d.", "ml.g5.", "ml.g6.", "ml.g6e.", "ml.inf2."] {
            assert!(names.iter().any(|n| n.starts_with(family)), "{family}");
        }
        let p5 = types.iter().find(|t| t.instance_type == "ml.p5.48xlarge").unwrap();
        assert_eq!((p5.accelerator_count, p5.v_cpu_count, p5.memory_in_mb), (8, 192.0, 2_097_152.0));
    }
}
