//! Every way a scenario can be wrong gets one clear Spanish message naming the culprit, and
//! nothing is written (a previous database stays as it was).

use std::path::PathBuf;
use std::process::Command;

use crate::simulation::{AHORA, scenario_path, simulate_file};
use crate::support::flota_bin;

const PREVIOUS: &[u8] = b"SQLite format 3\0base anterior";

/// Applies `edit` to minimo.toml, simulates into a folder that already holds a database, and
/// checks the error names what went wrong and that the old files are untouched.
fn check(edit: impl Fn(String) -> String, expected: &str) {
    check_with(edit, &[], expected);
}

/// [`check`] with more arguments for `flota simular` (another `--ahora`).
fn check_with(edit: impl Fn(String) -> String, extra: &[&str], expected: &str) {
    let routes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rutas");
    let base = std::fs::read_to_string(scenario_path("minimo"))
        .unwrap()
        .replace(
            "rutas = \"../rutas\"",
            &format!("rutas = {:?}", routes.display().to_string()),
        );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("malo.toml");
    std::fs::write(&file, edit(base)).unwrap();
    // A stand-in database: `simular` only replaces files that start like one.
    std::fs::write(dir.path().join("flota.db"), PREVIOUS).unwrap();
    let (ok, stderr, db, truth) = simulate_file(&file, dir.path(), extra);
    assert!(!ok, "accepted a bad scenario; expected {expected:?}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(std::fs::read(db).unwrap(), PREVIOUS);
    assert!(!truth.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "stray files left behind"
    );
}

fn append(extra: &'static str) -> impl Fn(String) -> String {
    move |text| format!("{text}\n{extra}\n")
}

fn replace(from: &'static str, to: &'static str) -> impl Fn(String) -> String {
    move |text| {
        assert!(text.contains(from), "fixture lacks {from:?}");
        text.replacen(from, to, 1)
    }
}

#[test]
fn syntax_errors_have_file_line_column_and_key() {
    check(replace("dias = 2", "dias = 2 2"), "malo.toml:");
    check(
        replace("sigma_m = 5.0", "sigma = 5.0"),
        "clave desconocida 'sigma'",
    );
    check(replace("sigma_m = 5.0", "sigma = 5.0"), "malo.toml:19:1");
    check(replace("dias = 2", "dias = \"dos\""), "tipo inválido");
    check(replace("dias = 2", "dias = \"dos\""), "clave 'dias'");
    check(
        replace("placa = \"P-123BCD\"\ntipo", "tipo"),
        "falta la clave obligatoria 'placa'",
    );
}

#[test]
fn semantic_errors_name_the_culprit() {
    check(
        replace("rutas = [\"r01_cedis_z1_z4\"]", "rutas = [\"r99\"]"),
        "unidad 'P-123BCD': ruta desconocida 'r99'",
    );
    check(
        replace("tipo = \"camion\"", "tipo = \"tanque\""),
        "tipo desconocido 'tanque'",
    );
    check(
        replace("placa = \"P-456DEF\"\ntipo", "placa = \"p 123 bcd\"\ntipo"),
        "placa repetida",
    );
    check(
        replace(
            "zona_horaria = \"America/Guatemala\"",
            "zona_horaria = \"Marte/Olympus\"",
        ),
        "zona_horaria 'Marte/Olympus'",
    );
    check(
        replace("dias = 2", "dias = 0"),
        "dias = 0 fuera de los límites",
    );
    check(
        replace(
            "inicio = [\"06:20\", \"08:20\"]",
            "inicio = [\"08:20\", \"06:20\"]",
        ),
        "la primera hora debe ser la más temprana",
    );
    check(
        replace(
            "inicio = [\"06:20\", \"08:20\"]",
            "inicio = [\"6 y media\", \"08:20\"]",
        ),
        "no es una hora HH:MM",
    );
    check(
        append(
            "[[geocercas]]\nnombre = \"Línea\"\ntipo = \"x\"\npoligono = [[14.6, -90.5], [14.7, -90.5], [14.8, -90.5]]",
        ),
        "geocerca 'Línea': el polígono es degenerado",
    );
    check(
        append(
            "[[geocercas]]\nnombre = \"Doble\"\ntipo = \"x\"\ncirculo = { centro = [14.6, -90.5], radio_m = 10 }\ncuadrado = { centro = [14.6, -90.5], medio_lado_m = 10 }",
        ),
        "defina exactamente una forma",
    );
    check(
        append(
            "[[geocercas]]\nnombre = \"cedis zona 12\"\ntipo = \"x\"\ncirculo = { centro = [14.6, -90.5], radio_m = 10 }",
        ),
        "geocerca 'cedis zona 12' está repetida",
    );
    check(
        replace("medio_lado_m = 650", "medio_lado_m = -5"),
        "medio_lado_m = -5 fuera de los límites",
    );
    // Fences across the 180th meridian (Taveuni, Fiji): every containment and edge test works
    // in plain longitudes, so they are refused rather than held on one side only.
    for shape in [
        "circulo = { centro = [-16.788, 179.999], radio_m = 300 }",
        "cuadrado = { centro = [-16.788, -179.999], medio_lado_m = 300 }",
        "poligono = [[-16.78, 179.99], [-16.78, -179.99], [-16.80, -179.99], [-16.80, 179.99]]",
    ] {
        check(
            move |text| {
                format!("{text}\n[[geocercas]]\nnombre = \"Waiyevo\"\ntipo = \"x\"\n{shape}\n")
            },
            "geocerca 'Waiyevo' cruza el antimeridiano (longitud ±180°)",
        );
    }
}

/// Semantic errors name their line and column too, as syntax errors do; a duplicate table or
/// key is named.
#[test]
fn semantic_errors_name_the_line() {
    check(
        replace(
            "inicio = [\"06:20\", \"08:20\"]",
            "inicio = [\"06:20\", \"25:00\"]",
        ),
        "malo.toml:15:1: [turno] inicio: '25:00' no es una hora HH:MM",
    );
    check(
        replace("rutas = [\"r01_cedis_z1_z4\"]", "rutas = [\"r99\"]"),
        "malo.toml:41:1: unidad 'P-123BCD': ruta desconocida 'r99'",
    );
    check(
        replace("hora = \"10:00\"", "hora = \"10:75\""),
        "malo.toml:71:1: [[inyecciones.perdida_senal]] #1 (P-123BCD) hora: '10:75' no es una hora",
    );
    check(
        replace("hora = \"10:00\"", "hora = \"05:00\""),
        "malo.toml:71:1: [[inyecciones.perdida_senal]] #1 (P-123BCD): 05:00–05:09 no cae siempre dentro del turno del 2026-08-18 (08:20 a 13:50)",
    );
    check(
        replace("dias = 2", "dias = 0"),
        "malo.toml:9:1: [escenario] dias = 0 fuera de los límites",
    );
    check(
        replace("[ruido]\nsigma_m = 5.0", "[ruido]\nsigma_m = -1.0"),
        "malo.toml:19:1: [ruido] sigma_m = -1 fuera de los límites",
    );
    // A shift rule: Tuesday's night shift could still run when Wednesday's starts.
    check(
        append("[turno.martes]\ninicio = [\"22:00\", \"23:00\"]\nduracion_h = [8, 9]"),
        "malo.toml:86:1: unidad 'P-123BCD': el turno del martes 2026-08-18",
    );
    check(
        append("[turno]\ninicio = [\"06:00\", \"07:00\"]"),
        "malo.toml:85:2: tabla duplicada [turno]: ya se definió antes",
    );
    check(
        replace("dias = 2", "dias = 2\ndias = 3"),
        "malo.toml:10:1: clave duplicada 'dias': ya tiene valor en esta tabla",
    );
}

/// Times are wall-clock times of the unit's zone: one the clocks skip is refused naming it, the
/// zone and the jump; one they repeat may carry the offset of the occurrence it means, which
/// must be one the zone uses.
#[test]
fn clock_changes_in_scenarios() {
    // Madrid, Sunday 29 March 2026 (clocks jump from 02:00 to 03:00) and the Monday after.
    let madrid = |text: String| {
        format!(
            "{}\n[calendario]\ndias_laborables = [\"lunes\", \"martes\", \"miercoles\", \"jueves\", \"viernes\", \"sabado\", \"domingo\"]\n",
            text.replace(
                "zona_horaria = \"America/Guatemala\"",
                "zona_horaria = \"Europe/Madrid\"",
            )
        )
    };
    let monday = ["--ahora", "2026-03-30T15:30"];
    check_with(
        |text| {
            madrid(text).replace(
                "dia = -1\nhora = \"10:00\"",
                "fecha = 2026-03-29\nhora = \"02:30\"",
            )
        },
        &monday,
        "malo.toml:71:1: [[inyecciones.perdida_senal]] #1 (P-123BCD) hora: 2026-03-29 02:30 no existe en Europe/Madrid: ese día los relojes saltan de 02:00 a 03:00",
    );
    check_with(
        |text| {
            madrid(text).replace(
                "inicio = [\"06:20\", \"08:20\"]",
                "inicio = [\"02:10\", \"02:40\"]",
            )
        },
        &monday,
        "malo.toml:15:1: unidad 'P-123BCD': el turno del domingo 2026-03-29 empieza entre 02:10 y 02:40, horas que no existen en Europe/Madrid ese día (cambio de horario)",
    );
    check_with(
        madrid,
        &["--ahora", "2026-03-29T02:30"],
        "--ahora 2026-03-29 02:30 no existe en Europe/Madrid: ese día los relojes saltan de 02:00 a 03:00",
    );
    check(
        |text| {
            text.replace(
                "inicio = [\"06:20\", \"08:20\"]",
                "inicio = [\"06:20+01:00\", \"08:20\"]",
            )
        },
        "2026-08-18 06:20+01:00 no es una hora de America/Guatemala: a esa hora allí rige -06:00",
    );
    check_with(
        |text| text,
        &["--ahora", "2026-08-19T15:30+02:00"],
        "--ahora 2026-08-19 15:30+02:00 no es una hora de America/Guatemala",
    );
}

#[test]
fn injection_errors_name_the_culprit() {
    // 2026-08-16 is a Sunday, outside the two-day period too; 08-18 is a Tuesday.
    check(
        append(
            "[[inyecciones.perdida_senal]]\nplaca = \"P-789GHJ\"\nfecha = 2026-08-16\nhora = \"10:00\"\nminutos = 5",
        ),
        "fuera del periodo simulado",
    );
    check(
        replace(
            "[[unidades]]\nplaca = \"P-789GHJ\"",
            "[[unidades]]\ndias_laborables = [\"lunes\"]\nplaca = \"P-789GHJ\"",
        ),
        "la unidad no trabaja el martes (2026-08-18)",
    );
    check(
        replace(
            "placa = \"P-456DEF\"\nminutos = 40",
            "placa = \"P-000XXX\"\nminutos = 40",
        ),
        "placa desconocida 'P-000XXX'",
    );
    check(
        replace("velocidad_kmh = 95", "velocidad_kmh = 50"),
        "no supera el límite de 60 km/h",
    );
    check(
        replace("velocidad_kmh = 95", "velocidad_kmh = 300"),
        "imposible, un panel no pasa de 110 km/h",
    );
    check(
        replace("duracion_s = 60", "duracion_s = 900"),
        "duración imposible",
    );
    check(
        replace(
            "hora = \"10:00\"\nminutos = 9",
            "hora = \"05:00\"\nminutos = 9",
        ),
        "no cae siempre dentro del turno",
    );
    check(
        replace("parada = \"amatitlan\"", "parada = \"la luna\""),
        "la parada 'la luna' no es una entrega de la ruta 'r03_vn_amatitlan'",
    );
    check(
        append(
            "[[inyecciones.perdida_senal]]\nplaca = \"P-123BCD\"\ndia = -1\nhora = \"11:00\"\nminutos = 5",
        ),
        "inyecciones superpuestas: dos 'perdida_senal' para P-123BCD",
    );
    check(
        append(
            "[[inyecciones.exceso_velocidad]]\nplaca = \"P-123BCD\"\ndia = -1\nhora = \"10:05\"\nvelocidad_kmh = 80\nduracion_s = 60",
        ),
        "inyecciones superpuestas: 'exceso_velocidad' y 'perdida_senal' de P-123BCD",
    );
    check(
        replace(
            "placa = \"P-456DEF\"\nminutos = 40",
            "placa = \"P-456DEF\"\nminutos = 500",
        ),
        "puede no haber empezado su turno",
    );
    check(
        append("[inyecciones.aleatorias]\nexceso_velocidad = 50"),
        "solo hay 3 unidades-día disponibles",
    );
}

#[test]
fn random_injection_errors_name_the_culprit() {
    check(
        append("[inyecciones.aleatorias]\nexceso_velocidad_kmh = []"),
        "[inyecciones.aleatorias]: exceso_velocidad_kmh y parada_minutos no pueden estar vacías",
    );
    check(
        append("[inyecciones.aleatorias]\nperdida_minutos = [0.5, 3]"),
        "[inyecciones.aleatorias] perdida_minutos: [0.5, 3] fuera de los límites [1, 240]",
    );
    check(
        append("[inyecciones.aleatorias]\nexceso_velocidad = 1\nexceso_velocidad_kmh = [200]"),
        "exceso_velocidad_kmh: 200 km/h es imposible para 'P-123BCD' (camion: máximo 90 km/h)",
    );
    check(
        append("[inyecciones.aleatorias]\nexceso_velocidad = 1\nexceso_velocidad_kmh = [50]"),
        "exceso_velocidad_kmh: 50 km/h no supera el límite de 'P-123BCD' (60 km/h)",
    );
    // Three units work on the day of --ahora; P-456DEF is already stopped by the file.
    check(
        append("[inyecciones.aleatorias]\ndetenida_ahora = 3"),
        "detenida_ahora = 3: solo 2 unidades trabajan a --ahora con turno ya empezado hace 100 min",
    );
}

#[test]
fn weekday_words_with_or_without_accents() {
    // Accented and capitalised words are days (so the injection's Tuesday is not one of them).
    check(
        replace(
            "[[unidades]]\nplaca = \"P-789GHJ\"",
            "[[unidades]]\ndias_laborables = [\"Miércoles\", \"SÁBADO\", \"jueves\"]\nplaca = \"P-789GHJ\"",
        ),
        "la unidad no trabaja el martes (2026-08-18)",
    );
    check(
        replace(
            "[[unidades]]\nplaca = \"P-789GHJ\"",
            "[[unidades]]\ndias_laborables = [\"miercoles\", \"lunez\"]\nplaca = \"P-789GHJ\"",
        ),
        "unidad 'P-789GHJ' dias_laborables: 'lunez' no es un día (lunes, martes, miercoles, jueves, viernes, sabado, domingo)",
    );
    // A night shift may cross midnight, not run into the next day's shift.
    check(
        append("[turno.martes]\ninicio = [\"22:00\", \"23:00\"]\nduracion_h = [8, 9]"),
        "unidad 'P-123BCD': el turno del martes 2026-08-18 (inicio hasta 23:00, hasta 9 h) puede seguir cuando empieza el del miércoles 2026-08-19 (desde 06:20)",
    );
}

/// A unit's `ausencias` (sick, leave, workshop): an injection on an absent day is refused
/// saying why, and every entry the loader cannot use is named with what is wrong with it.
#[test]
fn absences_are_read_and_checked() {
    let unit = "[[unidades]]\nplaca = \"P-789GHJ\"";
    let with = |absences: &'static str| {
        move |text: String| {
            assert!(text.contains(unit), "fixture lacks {unit:?}");
            text.replacen(
                unit,
                &format!("[[unidades]]\nausencias = {absences}\nplaca = \"P-789GHJ\""),
                1,
            )
        }
    };
    // P-789GHJ's long stop is injected on Tuesday 18 August.
    check(
        with("[\"2026-08-18\"]"),
        "la unidad no trabaja el martes (2026-08-18): está ausente ('ausencias')",
    );
    check(
        with("[{ fechas = \"2026-08-17..2026-08-18\", motivo = \"taller\" }]"),
        "la unidad no trabaja el martes (2026-08-18): está ausente (taller, 'ausencias')",
    );
    check(
        with("[2026-08-18]"),
        "la unidad no trabaja el martes (2026-08-18): está ausente ('ausencias')",
    );
    check(
        with("[\"2026-08-31..2026-08-20\"]"),
        "unidad 'P-789GHJ' ausencias[1]: el intervalo '2026-08-31..2026-08-20' termina antes de empezar",
    );
    check(
        with("[\"2026-08-10\", \"2026-09-31\"]"),
        "unidad 'P-789GHJ' ausencias[2]: '2026-09-31' no es una fecha AAAA-MM-DD: ese mes tiene 30 días",
    );
    check(
        with("[\"2026-08-10..2026-08-14\", { fechas = \"2026-08-14\" }]"),
        "unidad 'P-789GHJ' ausencias[2] (2026-08-14) se solapa con otra ausencia de la unidad (2026-08-10..2026-08-14)",
    );
    check(
        with("[{ fecha = \"2026-08-10\" }]"),
        "unidad 'P-789GHJ' ausencias[1]: clave desconocida 'fecha'; las aceptadas son: fechas, motivo",
    );
    check(
        with("[{ motivo = \"vacaciones\" }]"),
        "unidad 'P-789GHJ' ausencias[1]: falta 'fechas'",
    );
    check(
        with("[17]"),
        "unidad 'P-789GHJ' ausencias[1]: se esperaba una fecha AAAA-MM-DD o un intervalo",
    );
}

#[test]
fn bad_command_lines_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(flota_bin())
        .args(["simular", "--ahora", "ayer por la tarde", "--salida"])
        .arg(dir.path().join("x.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no es una fecha y hora local AAAA-MM-DDTHH:MM"),
        "{err}"
    );
    let out = Command::new(flota_bin())
        .args(["simular", "/no/existe.toml", "--ahora", AHORA, "--salida"])
        .arg(dir.path().join("x.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/existe.toml: no se pudo leer"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn the_embedded_default_needs_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("datos").join("flota.db");
    let out = Command::new(flota_bin())
        .args(["simular", "--ahora", AHORA, "--salida"])
        .arg(&db)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(db.exists() && dir.path().join("datos/flota.verdad.jsonl").exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("15 unidades × 7 días"), "{err}");
}

/// Tracker profiles: a unit naming one that does not exist, a mode or word not in the list, a
/// value out of its bounds — each named with its line.
#[test]
fn tracker_profile_errors_name_the_culprit() {
    check(
        replace(
            "rutas = [\"r01_cedis_z1_z4\"]",
            "rutas = [\"r01_cedis_z1_z4\"]\nrastreador = \"gps\"",
        ),
        "malo.toml:42:1: unidad 'P-123BCD': rastreador desconocido 'gps'; defina [rastreadores.gps]",
    );
    check(
        append("[rastreadores.gps]\nmodo = \"rapido\""),
        "[rastreadores.gps] modo = 'rapido': use 'fijo' o 'adaptativo'",
    );
    check(
        append("[rastreadores.gps]\nsin_fix_modo = \"ultimo\""),
        "[rastreadores.gps] sin_fix_modo = 'ultimo': use 'nada' o 'repetir'",
    );
    check(
        append("[rastreadores.gps]\nparpadeo_ignicion_probabilidad = 1.5"),
        "[rastreadores.gps] parpadeo_ignicion_probabilidad = 1.5 fuera de los límites [0, 1]",
    );
    check(
        append("[rastreadores.gps]\nsin_cobertura_min = [30, 5]"),
        "[rastreadores.gps] sin_cobertura_min: el rango [30, 5] debe ir de menor a mayor",
    );
    check(append("[rastreadores.gps]\nlatidos = 5"), "latidos");
}
