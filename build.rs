//! Records the compiler version so `informacion_sistema` and `--version` can report the runtime,
//! and links the executables position-dependent on Linux with glibc, the server's functions
//! first (see `main`).

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

    // The same reason, for the code: the kernel maps an executable's pages in 64 KB windows
    // around each one touched, and the few thousand functions a `servir` session runs were
    // spread over 11 MB of code, so 6.5 MB of it was resident before the first tool call.
    // The linker (LLD, Rust's default on x86_64 Linux) places the functions listed in
    // link/server-symbols.txt first and together: 2.6 MB idle, 3 MB after 200 maps
    // (docs/rendimiento.md, session eighteen). Only the layout changes; a function missing from
    // the list (new code, another compiler) is placed as before. `link/regenerate.sh` remakes
    // the list. Left out where another linker was chosen (GNU ld has no such option) or
    // with `FLOTA_ORDEN=0`.
    println!("cargo:rerun-if-changed=link/server-symbols.txt");
    println!("cargo:rerun-if-env-changed=FLOTA_ORDEN");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = flags.contains("linker") || flags.contains("fuse-ld");
    if linux_gnu
        && !own_linker
        && std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
        && std::env::var_os("FLOTA_ORDEN").is_none_or(|v| v != "0")
    {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={manifest}/link/server-symbols.txt"
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
