//! Converts a vector bin-packing instance (VPSolver `.vbp` text format, 2 or 3 resources) into a
//! fleetplan scenario (JSON on stdout) whose optimal instance count is the instance's optimum
//! (see `benches/support/vbp.rs` for the exact resource scaling).
//!
//! ```sh
//! cargo run --release --features examples --example vbp_convert -- [--dims 2] benches/data/vbp/Triplet_classC_60_3_0.vbp > c60.json
//! ```
//! `--dims K` keeps the first K resources of the file (default: all, at most 3).
//!
//! `--all DIR` writes every stored run of `benches/data/vbp/values.tsv` as `DIR/<run>.json`
//! (`@2d` written `-2d`), e.g. for the command-line sweep with its independent checker:
//! `scenario_sweep run DIR --bin target/release/fleetplan --time-limit-ms 2000` (docs/sweep.md).

use std::path::Path;

#[path = "../benches/support/vbp.rs"]
mod vbp;

/// Writes every stored run into `dir`; the number written.
fn write_all(dir: &Path) -> Result<usize, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let runs = vbp::known_values(root)?;
    for run in &runs {
        let scenario = run.instance()?.scenario()?;
        let json = serde_json::to_string_pretty(&scenario).map_err(|e| e.to_string())?;
        let path = dir.join(format!("{}.json", run.name.replace('@', "-")));
        std::fs::write(&path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(runs.len())
}

fn main() {
    let mut dimensions = None;
    let mut path = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--all" {
            let Some(dir) = args.next() else {
                eprintln!("--all needs a directory");
                std::process::exit(2);
            };
            match write_all(Path::new(&dir)) {
                Ok(count) => eprintln!("{count} scenarios written to {dir}"),
                Err(message) => {
                    eprintln!("{message}");
                    std::process::exit(1);
                }
            }
            return;
        }
        if arg == "--dims" {
            let Some(count) = args.next().and_then(|value| value.parse::<usize>().ok()) else {
                eprintln!("--dims needs a resource count");
                std::process::exit(2);
            };
            dimensions = Some(count);
        } else {
            path = Some(arg);
        }
    }
    let Some(path) = path else {
        eprintln!("usage: vbp_convert [--dims K] INSTANCE.vbp | vbp_convert --all DIR");
        std::process::exit(2);
    };
    let converted = vbp::VbpInstance::read(Path::new(&path))
        .and_then(|instance| match dimensions {
            Some(count) => instance.projected(count),
            None => Ok(instance),
        })
        .and_then(|instance| instance.scenario())
        .and_then(|scenario| serde_json::to_string_pretty(&scenario).map_err(|e| e.to_string()));
    match converted {
        Ok(json) => println!("{json}"),
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}
