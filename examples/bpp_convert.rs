//! Converts a bin-packing instance (BPPLIB text format: item count, capacity, sizes) into a
//! fleetplan scenario (JSON on stdout) whose optimal instance count is the instance's optimum
//! (see `benches/support/bpp.rs` for the translation).
//!
//! ```sh
//! cargo run --release --features examples --example bpp_convert -- benches/data/bpp/Falkenauer_t60_00.txt > t60_00.json
//! ```

use std::path::Path;

#[path = "../benches/support/bpp.rs"]
mod bpp;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bpp_convert INSTANCE.txt");
        std::process::exit(2);
    };
    let converted = bpp::BppInstance::read(Path::new(&path))
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
