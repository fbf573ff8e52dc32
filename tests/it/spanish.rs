//! Spanish everywhere: every verb's help and a set of failures across verbs (bad flags and
//! values, missing files, broken TOML, a float where an integer goes, bad databases, full and
//! closed outputs) read with no common English word; the library's own text only at `debug`;
//! a reader that stops reading (`| head`) ends any verb quietly.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::flota_bin;

/// Words of English that no Spanish sentence of flota uses. Proper nouns (Google, Routes
/// API, OSRM, SQLite…), flag names, file names and values (`driving`, `true`) are not listed
/// or are skipped by [`english_words`].
const ENGLISH: &[&str] = &[
    "the",
    "of",
    "and",
    "or",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "not",
    "to",
    "at",
    "in",
    "on",
    "by",
    "it",
    "an",
    "as",
    "if",
    "for",
    "from",
    "with",
    "this",
    "that",
    "which",
    "while",
    "has",
    "have",
    "can",
    "cannot",
    "could",
    "should",
    "must",
    "will",
    "did",
    "does",
    "found",
    "such",
    "invalid",
    "expected",
    "unexpected",
    "usage",
    "options",
    "option",
    "print",
    "default",
    "possible",
    "values",
    "value",
    "file",
    "directory",
    "permission",
    "denied",
    "missing",
    "unknown",
    "type",
    "floating",
    "point",
    "integer",
    "string",
    "argument",
    "arguments",
    "required",
    "provided",
    "failed",
    "failure",
    "unable",
    "broken",
    "pipe",
    "parsing",
    "key",
    "table",
    "line",
    "column",
    "newline",
    "quoted",
    "literal",
    "empty",
    "too",
    "many",
    "few",
    "out",
    "range",
    "digit",
    "field",
    "variant",
    "length",
    "sequence",
    "struct",
    "boolean",
    "character",
    "data",
    "database",
    "disk",
    "read",
    "write",
    "only",
    "panicked",
    "thread",
    "os",
    "information",
    "command",
    "subcommand",
    "version",
    "try",
    "more",
    "some",
    "within",
    "between",
    "number",
    "input",
    "output",
    "trailing",
    "exceeded",
    "limit",
    "open",
    "unsupported",
    "malformed",
    "corrupt",
    "locked",
    "busy",
    "attempt",
    "readonly",
    "syntax",
];

/// The English words in `text`: tokens that are flags (`--help`), paths or file names are
/// skipped, the rest is split into words and looked up in [`ENGLISH`].
fn english_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for token in text.split_whitespace() {
        let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
        // Flags, paths, and names quoted as names: «version» (an XML attribute), "version"
        // (a JSON key of the protocol, echoed by `flota cliente`).
        if bare.starts_with('-') || token.contains(['/', '\\', '«', '"']) {
            continue;
        }
        // `archivo.toml`, `claude_desktop_config.json`: names, not words.
        if bare.contains('.') || bare.contains('_') {
            continue;
        }
        for word in bare.split(|c: char| !c.is_alphabetic()) {
            let word = word.to_lowercase();
            if ENGLISH.contains(&word.as_str()) {
                found.push(word);
            }
        }
    }
    found
}

fn check_spanish(what: &str, text: &str) {
    let english = english_words(text);
    assert!(
        english.is_empty(),
        "English {english:?} in `{what}`:\n{text}"
    );
    for tell in [
        "Usage:",
        "[default:",
        "possible values",
        "(os error",
        "panicked",
        "[original:",
    ] {
        assert!(!text.contains(tell), "{tell:?} in `{what}`:\n{text}");
    }
}

fn flota_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(flota_bin());
    command
        .args(args)
        .current_dir(dir)
        .env_remove("FLOTA_LOG")
        .env_remove("FLOTA_DB")
        .env_remove("MCP_FLOTA_DB")
        .env_remove("GOOGLE_MAPS_API_KEY")
        .env_remove("FLOTA_OSRM_URL")
        .env("FLOTA_TILES_URL", "no")
        .stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn text_of(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The verbs listed under "Comandos:" in a help text.
fn verbs_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Comandos:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_help_is_spanish() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = paths.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let out = flota_in(dir.path(), &args, &[]);
        assert!(out.status.success(), "{args:?}: {}", text_of(&out));
        let help = String::from_utf8(out.stdout).unwrap();
        check_spanish(&args.join(" "), &help);
        // `flota help VERB…` is the same help.
        let mut spoken = vec!["help"];
        spoken.extend(path.iter().map(String::as_str));
        let out = flota_in(dir.path(), &spoken, &[]);
        assert_eq!(String::from_utf8(out.stdout).unwrap(), help, "{spoken:?}");
        for verb in verbs_in(&help) {
            let mut next = path.clone();
            next.push(verb);
            paths.push(next);
        }
        seen += 1;
    }
    // flota itself, eight verbs, and the sub-verbs of `rutas` and `config`.
    assert!(seen >= 13, "only {seen} help texts found");
}

/// The files the failure cases use, in `dir`.
fn fixtures(dir: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let minimo = root.join("escenarios/minimo.toml");
    let out = flota_in(
        dir,
        &[
            "simular",
            minimo.to_str().unwrap(),
            "--ahora",
            AHORA,
            "--salida",
            "m.db",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text_of(&out));
    std::fs::create_dir(dir.join("carpeta")).unwrap();
    std::fs::write(dir.join("archivo"), "hola\n").unwrap();
    std::fs::write(dir.join("basura.db"), "hola mundo\n".repeat(500)).unwrap();
    std::fs::write(dir.join("vacia.db"), "").unwrap();
    let db = std::fs::read(dir.join("m.db")).unwrap();
    std::fs::write(dir.join("cortada.db"), &db[..db.len() / 3]).unwrap();
    let scenario = std::fs::read_to_string(&minimo).unwrap().replace(
        "rutas = \"../rutas\"",
        &format!("rutas = {:?}", root.join("rutas")),
    );
    let variant = |name: &str, from: &str, to: &str| {
        assert!(scenario.contains(from), "{from}");
        std::fs::write(dir.join(name), scenario.replacen(from, to, 1)).unwrap();
    };
    variant("decimal.toml", "dias = 2", "dias = 2.5");
    variant("texto.toml", "semilla = 11", "semilla = \"once\"");
    variant("sin_comillas.toml", "sigma_m = 5.0", "sigma_m = cinco");
    variant(
        "dos_valores.toml",
        "intervalo_reporte_s = 15",
        "intervalo_reporte_s = 15 16",
    );
    variant("clave.toml", "semilla = 11", "semilla = 11\nfoo = 1");
    variant("negativo.toml", "semilla = 11", "semilla = -3");
    variant("fecha.toml", "dias = 2", "desde = 2026-13-01");
    variant("abierta.toml", "[ruido]", "[ruido");
    variant(
        "deteccion.toml",
        "[ruido]",
        "[deteccion]\nradio_m = 5\n\n[ruido]",
    );
    variant(
        "lista.toml",
        &format!("rutas = {:?}", root.join("rutas")),
        "rutas = [1, 2]",
    );
    variant("falta.toml", "nombre = \"minimo\"\n", "");
    std::fs::write(dir.join("hola.toml"), "hola mundo\n").unwrap();
    std::fs::create_dir(dir.join("rt")).unwrap();
    std::fs::write(dir.join("rt/mala.json"), "{\"nombre\": 3}").unwrap();
    std::fs::write(dir.join("rt/cortada.json"), "{\"nombre\": \"cortada\",").unwrap();
    std::fs::write(dir.join("trazo.gpx"), "<gpx><trk>").unwrap();
    std::fs::write(
        dir.join("pedido.jsonl"),
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"prueba","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"posicion_actual","arguments":{"placa":"P-123BCD"}}}"#,
            "\n",
            "{no es json\n",
        ),
    )
    .unwrap();
}

/// A Wednesday afternoon of the fixture's week: scenarios run to it whatever day it is.
const AHORA: &str = "2026-08-19T15:30";

#[test]
fn failures_across_verbs_are_spanish() {
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let export = |db: &'static str| {
        vec![
            "exportar",
            "--db",
            db,
            "--placa",
            "P-123BCD",
            "--fecha",
            "2026-08-19",
            "--formato",
            "gpx",
            "--salida",
            "-",
        ]
    };
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let routes = routes.to_str().unwrap();
    // (arguments, exit code)
    let cases: Vec<(Vec<&str>, i32)> = vec![
        // Bad flags and values.
        (vec!["simular", "--xyz"], 2),
        (vec!["nada"], 2),
        (vec!["simular", "a.toml", "b.toml"], 2),
        (vec!["evaluar", "--tolerancia", "99999"], 2),
        (vec!["evaluar", "--tolerancia", "muchos"], 2),
        (vec!["evaluar", "--json=3"], 2),
        (vec!["evaluar", "--f1-minimo", "2"], 2),
        (vec!["simular", "--semilla", "once"], 2),
        (vec!["simular", "--ahora", "ayer"], 2),
        (vec!["servir", "--limite-llamada", "-5"], 2),
        (
            vec![
                "exportar",
                "--formato",
                "pdf",
                "--placa",
                "P",
                "--fecha",
                "hoy",
            ],
            2,
        ),
        (vec!["exportar", "--placa", "P"], 2),
        (vec!["rutas"], 2),
        (vec!["config"], 2),
        (vec!["rutas", "regenerar", "--proveedor", "carta"], 2),
        (vec!["rutas", "regenerar", "--reintentos", "99"], 2),
        (vec!["rutas", "nueva"], 2),
        (vec!["rutas", "nueva", "x", "--parada", "cedis"], 2),
        (
            vec![
                "rutas",
                "nueva",
                "x",
                "--velocidad",
                "40",
                "--parada",
                "a:1,2",
            ],
            2,
        ),
        (vec!["cliente", "--demo", "--replay", "x.jsonl"], 2),
        // Missing files, folders for files.
        (vec!["simular", "noexiste.toml", "--ahora", AHORA], 1),
        (vec!["simular", "carpeta"], 1),
        (vec!["analizar", "noexiste.db"], 1),
        (vec!["analizar", "carpeta"], 1),
        (vec!["evaluar", "noexiste.db"], 1),
        (vec!["evaluar", "m.db", "--verdad", "noexiste.jsonl"], 1),
        (vec!["evaluar", "m.db", "--verdad", "carpeta"], 1),
        (export("noexiste.db"), 1),
        (vec!["rutas", "ver", "--dir", "noexiste"], 1),
        (vec!["rutas", "ver", "nada", "--dir", routes], 1),
        (
            vec![
                "rutas",
                "nueva",
                "x",
                "--desde",
                "noexiste.gpx",
                "--dir",
                "rt",
            ],
            1,
        ),
        (
            vec!["rutas", "nueva", "x", "--desde", "trazo.gpx", "--dir", "rt"],
            1,
        ),
        (vec!["cliente", "--replay", "noexiste.jsonl"], 1),
        // Broken TOML, a float where an integer goes, wrong types and keys.
        (vec!["simular", "hola.toml", "--ahora", AHORA], 1),
        (vec!["simular", "decimal.toml", "--ahora", AHORA], 1),
        (vec!["simular", "texto.toml", "--ahora", AHORA], 1),
        (vec!["simular", "sin_comillas.toml", "--ahora", AHORA], 1),
        (vec!["simular", "dos_valores.toml", "--ahora", AHORA], 1),
        (vec!["simular", "clave.toml", "--ahora", AHORA], 1),
        (vec!["simular", "negativo.toml", "--ahora", AHORA], 1),
        (vec!["simular", "fecha.toml", "--ahora", AHORA], 1),
        (vec!["simular", "abierta.toml", "--ahora", AHORA], 1),
        (vec!["simular", "deteccion.toml", "--ahora", AHORA], 1),
        (vec!["simular", "lista.toml", "--ahora", AHORA], 1),
        (vec!["simular", "falta.toml", "--ahora", AHORA], 1),
        // A directions server that refuses the connection (loopback port 9: discard, closed).
        (
            vec![
                "rutas",
                "nueva",
                "x",
                "--parada",
                "a:14.5,-90.5",
                "--parada",
                "b:14.6,-90.6",
                "--proveedor",
                "osrm",
                "--url",
                "http://127.0.0.1:9",
                "--reintentos",
                "0",
                "--dir",
                "rt",
            ],
            1,
        ),
        // Broken route files.
        (vec!["rutas", "ver", "mala", "--dir", "rt"], 1),
        (vec!["rutas", "ver", "cortada", "--dir", "rt"], 1),
        // Bad databases.
        (vec!["analizar", "basura.db"], 1),
        (vec!["analizar", "vacia.db"], 1),
        (vec!["analizar", "cortada.db"], 1),
        (vec!["evaluar", "basura.db"], 1),
        (
            vec!["evaluar", "cortada.db", "--verdad", "m.verdad.jsonl"],
            1,
        ),
        (export("basura.db"), 1),
        (export("cortada.db"), 1),
        (
            vec!["cliente", "--replay", "pedido.jsonl", "--db", "basura.db"],
            0,
        ),
        // Outputs that cannot be written.
        (
            vec!["simular", "--salida", "archivo/x.db", "--ahora", AHORA],
            1,
        ),
        (vec!["simular", "--salida", "carpeta", "--ahora", AHORA], 1),
        (
            vec![
                "exportar",
                "--db",
                "m.db",
                "--placa",
                "P-123BCD",
                "--fecha",
                "2026-08-19",
                "--formato",
                "gpx",
                "--salida",
                "archivo/x.gpx",
            ],
            1,
        ),
        (
            vec![
                "rutas",
                "ver",
                "--dir",
                routes,
                "--geojson",
                "archivo/x.geojson",
            ],
            1,
        ),
    ];
    let mut failures = Vec::new();
    for (args, code) in &cases {
        let out = flota_in(dir.path(), args, &[]);
        let text = text_of(&out);
        let what = args.join(" ");
        if out.status.code() != Some(*code) {
            failures.push(format!(
                "`{what}`: {} instead of {code}:\n{text}",
                out.status
            ));
            continue;
        }
        if text.trim().is_empty() {
            failures.push(format!("`{what}`: said nothing"));
            continue;
        }
        if std::env::var_os("FLOTA_PRUEBA_VER").is_some() {
            println!("$ flota {what}\n{text}");
        }
        let result = std::panic::catch_unwind(|| check_spanish(&what, &text));
        if let Err(panic) = result {
            failures.push(panic.downcast_ref::<String>().cloned().unwrap_or_default());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A simulation whose stderr nobody reads any more still writes its files and succeeds: the
/// summary line has nowhere to go, which is no failure.
#[test]
fn a_closed_stderr_does_not_fail_a_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let minimo = Path::new(env!("CARGO_MANIFEST_DIR")).join("escenarios/minimo.toml");
    let status = Command::new(flota_bin())
        .args([
            "simular",
            minimo.to_str().unwrap(),
            "--ahora",
            AHORA,
            "--salida",
            "m.db",
        ])
        .current_dir(dir.path())
        .env_remove("FLOTA_LOG")
        .stdout(Stdio::null())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(dir.path().join("m.db").exists());
}

/// Files and folders this process cannot read or write: as an unprivileged account when the
/// tests run as root (root reads and writes anywhere).
#[test]
fn permission_failures_are_said_once_in_spanish() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fixtures(dir);
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    std::fs::write(dir.join("privado.toml"), "[escenario]\n").unwrap();
    mode(&dir.join("privado.toml"), 0o000);
    std::fs::copy(dir.join("m.verdad.jsonl"), dir.join("privado.jsonl")).unwrap();
    mode(&dir.join("privado.jsonl"), 0o000);
    std::fs::create_dir(dir.join("privadas")).unwrap();
    mode(&dir.join("privadas"), 0o000);
    std::fs::create_dir(dir.join("solo_lectura")).unwrap();
    std::fs::copy(dir.join("m.db"), dir.join("solo_lectura/m.db")).unwrap();
    mode(&dir.join("solo_lectura/m.db"), 0o444);
    mode(&dir.join("solo_lectura"), 0o555);
    mode(dir, 0o777);
    let root = std::fs::read(dir.join("privado.toml")).is_ok();
    let cases: [(&[&str], &str); 4] = [
        (
            &["simular", "privado.toml", "--ahora", AHORA],
            "error: privado.toml: no se pudo leer: sin permiso\n",
        ),
        (
            &["analizar", "solo_lectura/m.db"],
            "error: no se puede escribir en solo_lectura/m.db: el archivo o su carpeta son de solo lectura\n",
        ),
        (
            &["evaluar", "m.db", "--verdad", "privado.jsonl"],
            "error: no se pudo leer el registro de verdad privado.jsonl: sin permiso de lectura\n",
        ),
        (
            &["rutas", "ver", "--dir", "privadas"],
            "error: privadas: no se pudo leer: sin permiso\n",
        ),
    ];
    for (args, said) in cases {
        let mut command = Command::new(flota_bin());
        command
            .args(args)
            .current_dir(dir)
            .env_remove("FLOTA_LOG")
            .stdin(Stdio::null());
        if root {
            command.uid(65534).gid(65534);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), said, "{args:?}");
    }
    mode(&dir.join("privadas"), 0o755);
    mode(&dir.join("solo_lectura"), 0o755);
}

#[test]
fn a_full_stdout_is_said_in_spanish() {
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(flota_bin())
        .args(["evaluar", "m.db", "--json"])
        .current_dir(dir.path())
        .env_remove("FLOTA_LOG")
        .stdout(full)
        .output()
        .unwrap();
    let text = text_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("no queda espacio en el disco"), "{text}");
    check_spanish("evaluar > /dev/full", &text);
}

#[test]
fn the_original_text_shows_only_at_debug() {
    let dir = tempfile::tempdir().unwrap();
    let out = flota_in(dir.path(), &["simular", "noexiste.toml"], &[]);
    let said = text_of(&out);
    // Said once, in Spanish.
    assert_eq!(said, "error: noexiste.toml: no se pudo leer: no existe\n");
    let out = flota_in(
        dir.path(),
        &["simular", "noexiste.toml"],
        &[("FLOTA_LOG", "debug")],
    );
    let said = text_of(&out);
    assert!(
        said.contains("no existe [original: ") && said.contains("os error 2"),
        "{said}"
    );
}

/// A pipe whose reading end is already closed: every write to it fails with `EPIPE`, as when
/// `head` has read what it wanted and gone.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_reader_that_stops_reading_ends_any_verb_quietly() {
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let routes = routes.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["help", "simular"],
        vec!["--version"],
        vec!["evaluar", "m.db"],
        vec!["evaluar", "m.db", "--json"],
        vec!["rutas", "ver", "--dir", routes],
        vec!["rutas", "ver", "r01_cedis_z1_z4", "--dir", routes],
        vec!["rutas", "ver", "--dir", routes, "--geojson", "-"],
        vec!["config", "claude", "--db", "m.db"],
        vec![
            "exportar",
            "--db",
            "m.db",
            "--placa",
            "P-123BCD",
            "--fecha",
            "2026-08-19",
            "--formato",
            "geojson",
            "--salida",
            "-",
        ],
        vec!["cliente", "--replay", "pedido.jsonl", "--db", "m.db"],
        vec!["cliente", "--db", "m.db"],
    ];
    for args in cases {
        let out = Command::new(flota_bin())
            .args(&args)
            .current_dir(dir.path())
            .env_remove("FLOTA_LOG")
            .env("FLOTA_TILES_URL", "no")
            .stdin(Stdio::null())
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("error") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}
