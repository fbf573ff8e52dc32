//! Paths the user gets wrong: a folder given as the database, a truth log aimed at a database
//! (or at the database being written), outputs in places that cannot be written. Each case
//! runs the real binary in a folder laid out the same way and asserts the exit code, one
//! Spanish sentence on stderr, and that nothing in the folder changed.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ground_truth::fixture;
use crate::simulation::scenario_path;
use crate::support::flota_bin;

/// An unprivileged account: root writes into read-only folders, so those cases run as it.
const NOBODY: u32 = 65534;

/// The folder every case starts from: a previous database and truth log, a folder, a file,
/// a read-only folder, a symlink to the folder itself and one to the database.
fn lay_out(dir: &Path) {
    std::fs::copy(&fixture("minimo").db, dir.join("previa.db")).unwrap();
    std::fs::write(
        dir.join("previa.verdad.jsonl"),
        "{\"tipo\":\"verdad previa\"}\n",
    )
    .unwrap();
    std::fs::create_dir(dir.join("carpeta")).unwrap();
    std::fs::write(dir.join("archivo.txt"), "no soy una carpeta\n").unwrap();
    std::fs::create_dir(dir.join("solo_lectura")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("aqui")).unwrap();
    std::os::unix::fs::symlink("previa.db", dir.join("enlace.db")).unwrap();
    set_mode(&dir.join("solo_lectura"), 0o555);
    // Writable for the unprivileged account too, so only the read-only folder refuses it.
    set_mode(dir, 0o777);
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every entry under `dir`: file contents, symlink targets, folders.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    use sha2::Digest;
    let mut entries = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            let what = if kind.is_symlink() {
                format!("→ {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                pending.push(path.clone());
                "carpeta".to_owned()
            } else {
                format!("{:x}", sha2::Sha256::digest(std::fs::read(&path).unwrap()))
            };
            entries.insert(path.strip_prefix(dir).unwrap().to_path_buf(), what);
        }
    }
    entries
}

/// Whether this process writes where permissions say it may not (root does).
fn privileged(dir: &Path) -> bool {
    let probe = dir.join("solo_lectura").join("sonda");
    let wrote = std::fs::write(&probe, "").is_ok();
    let _ = std::fs::remove_file(&probe);
    wrote
}

/// Runs `flota ARGS` in a freshly laid-out folder; what went wrong, if anything.
fn run_case(args: &[&str], code: i32, needle: &str) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    lay_out(dir);
    let drop_privileges = privileged(dir);
    let before = tree(dir);
    let mut command = Command::new(flota_bin());
    command
        .args(args)
        .current_dir(dir)
        .env("FLOTA_TILES_URL", "no")
        .stdin(Stdio::null());
    if drop_privileges {
        command.uid(NOBODY).gid(NOBODY);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(code) {
        return Err(format!(
            "exit {:?}, expected {code}: {stderr}",
            out.status.code()
        ));
    }
    if !stderr.contains(needle) {
        return Err(format!("expected «{needle}» on stderr: {stderr}"));
    }
    let message = stderr.replacen("error: ", "", 1);
    for english in [
        "error",
        "disk I/O",
        "unable to open",
        "no such table",
        "denied",
        ".parcial",
    ] {
        if message.contains(english) {
            return Err(format!("«{english}» on stderr: {stderr}"));
        }
    }
    if tree(dir) != before {
        return Err("the folder changed".into());
    }
    Ok(())
}

/// Runs every case, then fails listing each one that went wrong.
#[derive(Default)]
struct Cases {
    failed: Vec<String>,
    run: usize,
}

impl Cases {
    fn check(&mut self, args: &[&str], code: i32, needle: &str) {
        self.run += 1;
        if let Err(why) = run_case(args, code, needle) {
            self.failed.push(format!("flota {}: {why}", args.join(" ")));
        }
    }

    fn assert_all_passed(self) {
        assert!(
            self.failed.is_empty(),
            "{} of {} cases failed:\n{}",
            self.failed.len(),
            self.run,
            self.failed.join("\n")
        );
    }
}

#[test]
fn wrong_paths_are_refused_in_spanish_and_nothing_is_written() {
    let scenario = scenario_path("minimo");
    let scenario: &'static str = scenario.to_str().unwrap().to_owned().leak();
    let simulate = |rest: &[&'static str]| -> Vec<&'static str> {
        let mut args = vec!["simular", scenario, "--ahora", "2026-08-19T15:30"];
        args.extend_from_slice(rest);
        args
    };
    let mut cases = Cases::default();
    const FOLDER_DB: &str = "carpeta es una carpeta, no una base de datos";
    // A folder where the database should be, in every verb that reads one.
    cases.check(&["analizar", "carpeta"], 1, FOLDER_DB);
    cases.check(&["evaluar", "carpeta"], 1, FOLDER_DB);
    cases.check(
        &[
            "exportar",
            "--db",
            "carpeta",
            "--placa",
            "P-123BCD",
            "--fecha",
            "ayer",
            "--formato",
            "geojson",
            "--salida",
            "x.geojson",
        ],
        1,
        FOLDER_DB,
    );
    cases.check(&["config", "claude", "--db", "carpeta"], 0, FOLDER_DB);

    // The truth log aimed at the database, however spelled, or at another database: a usage
    // error before anything is written.
    const SAME: &str = "es el mismo archivo que --salida";
    for (db, truth) in [
        ("nueva.db", "nueva.db"),
        ("nueva.db", "./nueva.db"),
        ("nueva.db", "aqui/nueva.db"),
        ("carpeta/../nueva.db", "nueva.db"),
        ("previa.db", "previa.db"),
        ("previa.db", "enlace.db"),
        ("enlace.db", "aqui/previa.db"),
    ] {
        cases.check(&simulate(&["--salida", db, "--verdad", truth]), 2, SAME);
    }
    cases.check(
        &simulate(&["--salida", "nueva.db", "--verdad", "previa.db"]),
        2,
        "--verdad previa.db es una base de datos SQLite, no un registro de verdad",
    );
    cases.check(
        &simulate(&["--salida", "nueva.db", "--verdad", "enlace.db"]),
        2,
        "--verdad enlace.db es una base de datos SQLite",
    );
    for db in ["previa.verdad.jsonl", "archivo.txt"] {
        cases.check(
            &simulate(&["--salida", db, "--verdad", "nueva.verdad.jsonl"]),
            2,
            &format!("--salida {db} existe y no es una base de datos SQLite"),
        );
    }

    // Places that cannot be written: one sentence naming the path as given.
    for (flag, path, reason) in [
        ("--salida", "carpeta", "es una carpeta"),
        (
            "--salida",
            "archivo.txt/a.db",
            "archivo.txt es un archivo, no una carpeta",
        ),
        (
            "--salida",
            "archivo.txt/sub/a.db",
            "archivo.txt es un archivo, no una carpeta",
        ),
        (
            "--salida",
            "solo_lectura/a.db",
            "no hay permiso para escribir en la carpeta solo_lectura",
        ),
        (
            "--salida",
            "solo_lectura/nueva/a.db",
            "la carpeta solo_lectura/nueva no existe y no hay permiso para crearla en solo_lectura",
        ),
        ("--verdad", "carpeta", "es una carpeta"),
        (
            "--verdad",
            "archivo.txt/v.jsonl",
            "archivo.txt es un archivo",
        ),
        (
            "--verdad",
            "solo_lectura/v.jsonl",
            "no hay permiso para escribir en la carpeta solo_lectura",
        ),
    ] {
        let mut args = vec!["--salida", "nueva.db", flag, path];
        if flag == "--salida" {
            args.drain(..2);
        }
        let needle = format!("no se puede escribir {path}: {reason}");
        cases.check(&simulate(&args), 1, &needle);
    }
    cases.check(
        &[
            "exportar",
            "--db",
            "previa.db",
            "--placa",
            "P-123BCD",
            "--fecha",
            "ayer",
            "--formato",
            "geojson",
            "--salida",
            "solo_lectura/x.geojson",
        ],
        1,
        "no se puede escribir solo_lectura/x.geojson: no hay permiso",
    );
    cases.assert_all_passed();
}
