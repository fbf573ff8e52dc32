//! Records the compiler version so `informacion_sistema` and `--version` can report the runtime.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| "rustc (versión desconocida)".into());
    println!("cargo:rustc-env=FLOTA_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
