//! Environment variables reach the verbs that use them, and only those: the database, "now",
//! the call limit, the online services' deadlines and the log level, through the real binary
//! (src/settings.rs reads them).

use std::process::{Command, Stdio};

use crate::support::flota_bin;

/// Every variable flota reads that these cases set; cleared so the developer's own
/// environment cannot decide a case.
const CLEARED: &[&str] = &[
    "FLOTA_DB",
    "MCP_FLOTA_DB",
    "FLOTA_AHORA",
    "FLOTA_LIMITE_LLAMADA_S",
    "FLOTA_LOG",
    "GOOGLE_MAPS_API_KEY",
    "FLOTA_GEOCODER_URL",
    "FLOTA_GEOCODER_LIMITE_S",
    "FLOTA_TILES_LIMITE_S",
];

/// What one run must show.
struct Want {
    code: i32,
    /// Substrings of stderr; a leading `!` means it must be absent.
    stderr: &'static [&'static str],
    /// The database `config claude` names, when the case is about that.
    db: Option<&'static str>,
}

fn check(args: &[&str], env: &[(&str, &str)], want: Want) {
    let mut command = Command::new(flota_bin());
    command
        .args(args)
        .env("FLOTA_TILES_URL", "no")
        .stdin(Stdio::null());
    for name in CLEARED {
        command.env_remove(name);
    }
    let out = command.envs(env.iter().copied()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let case = format!("{args:?} with {env:?}");
    assert_eq!(out.status.code(), Some(want.code), "{case}: {stderr}");
    for needle in want.stderr {
        match needle.strip_prefix('!') {
            Some(absent) => assert!(!stderr.contains(absent), "{case}: {stderr}"),
            None => assert!(stderr.contains(needle), "{case}: {stderr}"),
        }
    }
    if let Some(db) = want.db {
        let entry: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(entry["mcpServers"]["flota"]["args"][2], db, "{case}");
    }
}

#[test]
fn the_database_comes_from_the_flag_then_flota_db_then_mcp_flota_db() {
    let claude = ["config", "claude"];
    let names = |db| Want {
        code: 0,
        stderr: &[],
        db: Some(db),
    };
    check(
        &claude,
        &[("FLOTA_DB", "/datos/a.db")],
        names("/datos/a.db"),
    );
    check(
        &claude,
        &[("MCP_FLOTA_DB", "/datos/b.db")],
        names("/datos/b.db"),
    );
    check(
        &claude,
        &[("FLOTA_DB", "/datos/a.db"), ("MCP_FLOTA_DB", "/datos/b.db")],
        names("/datos/a.db"),
    );
    check(
        &["config", "claude", "--db", "/datos/c.db"],
        &[("FLOTA_DB", "/datos/a.db")],
        names("/datos/c.db"),
    );
    let export = [
        "exportar",
        "--placa",
        "P-1",
        "--fecha",
        "hoy",
        "--formato",
        "gpx",
    ];
    check(
        &export,
        &[("FLOTA_DB", "/no/existe/z.db")],
        Want {
            code: 1,
            stderr: &["No hay base de datos en /no/existe/z.db"],
            db: None,
        },
    );
}

#[test]
fn a_bad_value_is_an_error_only_for_the_verbs_that_use_it() {
    let bad_now = ("FLOTA_AHORA", "mañana");
    const SAID: &str = "error: FLOTA_AHORA: 'mañana' no es una fecha y hora local";
    check(
        &["servir", "--db", "/no/existe.db"],
        &[bad_now],
        Want {
            code: 1,
            stderr: &[SAID],
            db: None,
        },
    );
    check(
        &[
            "exportar",
            "--placa",
            "P-1",
            "--fecha",
            "hoy",
            "--formato",
            "gpx",
            "--db",
            "/no/existe.db",
        ],
        &[bad_now],
        Want {
            code: 1,
            stderr: &[SAID],
            db: None,
        },
    );
    // The flag makes the variable irrelevant; the server then ends with its input.
    check(
        &[
            "servir",
            "--db",
            "/no/existe.db",
            "--ahora",
            "2026-08-19T15:30",
        ],
        &[bad_now],
        Want {
            code: 0,
            stderr: &["!FLOTA_AHORA"],
            db: None,
        },
    );
    // A verb that has no "now" of the fleet does not read it.
    check(
        &["analizar", "/no/existe.db"],
        &[bad_now],
        Want {
            code: 1,
            stderr: &["/no/existe.db", "!FLOTA_AHORA"],
            db: None,
        },
    );
    check(
        &["servir", "--db", "/no/existe.db"],
        &[("FLOTA_LIMITE_LLAMADA_S", "abc")],
        Want {
            code: 1,
            stderr: &[
                "error: FLOTA_LIMITE_LLAMADA_S: 'abc' no es un número de segundos entre 0 y 86400",
            ],
            db: None,
        },
    );
    // The services' deadlines: refused by the verbs that wait on the service, ignored by an
    // export that fetches no tiles.
    for variable in ["FLOTA_TILES_LIMITE_S", "FLOTA_GEOCODER_LIMITE_S"] {
        check(
            &["servir", "--db", "/no/existe.db"],
            &[(variable, "0")],
            Want {
                code: 1,
                stderr: &["no es un número de segundos mayor que 0 y de 3600 como mucho"],
                db: None,
            },
        );
    }
    check(
        &["servir", "--db", "/no/existe.db"],
        &[("FLOTA_TILES_LIMITE_S", "-1")],
        Want {
            code: 1,
            stderr: &["error: FLOTA_TILES_LIMITE_S: '-1' no es un número de segundos"],
            db: None,
        },
    );
    check(
        &["servir", "--db", "/no/existe.db"],
        &[("FLOTA_GEOCODER_LIMITE_S", "pronto")],
        Want {
            code: 1,
            stderr: &["error: FLOTA_GEOCODER_LIMITE_S: 'pronto' no es un número de segundos"],
            db: None,
        },
    );
}

#[test]
fn flota_log_sets_the_level_and_verbose_raises_it() {
    let serve = ["servir", "--db", "/no/existe.db"];
    let quiet = |stderr| Want {
        code: 0,
        stderr,
        db: None,
    };
    check(&serve, &[], quiet(&["INFO flota servir"]));
    check(&serve, &[("FLOTA_LOG", "error")], quiet(&["!INFO"]));
    check(
        &serve,
        &[("FLOTA_LOG", "ruidoso")],
        quiet(&["INFO flota servir"]),
    );
    check(
        &["servir", "--db", "/no/existe.db", "--verbose"],
        &[("FLOTA_LOG", "error")],
        quiet(&["INFO flota servir"]),
    );
}
