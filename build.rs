//! Records the compiler version so `informacion_sistema` and `--version` can report the runtime,
//! and links the executables position-dependent on Linux with glibc (see `main`).

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

    // The server is a short-lived child of a chat client: its start and resident memory are
    // mostly the executable's own pages. As a PIE, the dynamic loader first applies ~40,000
    // relative relocations: it reads 1 MB of `.rela.dyn` and writes 1.2 MB of `.data.rel.ro`
    // into private copies (anonymous memory for the process's life), at every start. Linked
    // position-dependent those addresses are fixed at link time: half the page faults before
    // `initialize`, 2–3 MB less resident (docs/rendimiento.md, "Start → `initialize`"). The
    // cost is that the executable's own code is not at a random address (ASLR still moves the
    // libraries, stack, heap and mappings). The objects stay position-independent, so only the
    // final link changes and no dependency is rebuilt. `FLOTA_PIE=1` keeps the PIE.
    println!("cargo:rerun-if-env-changed=FLOTA_PIE");
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu && std::env::var_os("FLOTA_PIE").is_none_or(|v| v != "1") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
